"""The committed table of grouped transactions: which ``(producer group, group id)`` were committed,
bounded by count and age, so a replayed commit is recognised and its half messages dropped.

Pure bookkeeping; the service persists it with the rest of its state, and rebuilds the entries newer
than that snapshot from the commit ops in the CommitLog (each carries its id).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

GroupKey = tuple[str, str]
"""(producer group, transaction group id)."""


class CommittedGroups:
    """Oldest first. ``max_entries`` and ``retention_ms`` bound it: an id falls out when more newer ids
    exist or when it is older than the retention (a replay after that is no longer recognised)."""

    def __init__(self, max_entries: int, retention_ms: int) -> None:
        self.max_entries = max(1, max_entries)
        self.retention_ms = retention_ms
        self._entries: OrderedDict[GroupKey, int] = OrderedDict()  # -> decided at (ms)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, key: GroupKey, decided_ms: int) -> None:
        self._entries.pop(key, None)
        self._entries[key] = decided_ms
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def expire(self, now_ms: int) -> int:
        """Drop the ids decided longer ago than the retention; returns how many."""
        dropped = 0
        while self._entries:
            key, decided = next(iter(self._entries.items()))
            if now_ms - decided <= self.retention_ms:
                break
            del self._entries[key]
            dropped += 1
        return dropped

    def to_json(self) -> list[list[Any]]:
        return [[group, group_id, decided] for (group, group_id), decided in self._entries.items()]

    def load_json(self, rows: list[list[Any]]) -> None:
        for group, group_id, decided in rows:
            self.add((str(group), str(group_id)), int(decided))
