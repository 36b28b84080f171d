"""Committed consumer offsets, ``topic@group -> {queueId: offset}``, persisted in
``config/consumerOffset.json`` (ConsumerOffsetManager) every few seconds and at shutdown."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Final

from rocketq.store.config_file import read_json, write_json_atomically

log = logging.getLogger(__name__)

TOPIC_GROUP_SEPARATOR: Final = "@"


class ConsumerOffsetManager:
    """Thread safety: all methods take a lock; ``persist`` may run on any thread.

    ``commit`` (run by every pull that carries its consumer's offset) finds the queues of its
    ``topic@group`` through ``_queues_of`` (group -> topic -> the very dict of ``_table``), so the
    common commit builds no ``"topic@group"`` key; every change of ``_table``'s keys clears it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._table: dict[str, dict[int, int]] = {}
        self._queues_of: dict[str, dict[str, dict[int, int]]] = {}
        self._lock = threading.Lock()
        self._dirty = False

    def load(self) -> None:
        document = read_json(self.path) or {}
        self._queues_of.clear()
        for key, queues in (document.get("offsetTable") or {}).items():
            self._table[key] = {int(queue_id): int(offset) for queue_id, offset in queues.items()}
        if self._table:
            log.info("loaded offsets of %d topic@group pairs from %s", len(self._table), self.path)

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Record ``offset`` as ``group``'s committed offset of the queue; an offset equal to the one
        committed changes nothing (the next ``persist`` does not rewrite the file for it)."""
        if offset < 0:  # ali-ons commits -1 for queues it never consumed
            return
        with self._lock:
            topics = self._queues_of.get(group)
            queues = None if topics is None else topics.get(topic)
            if queues is None:
                queues = self._queues(group, topic)
            elif queues.get(queue_id) == offset:
                return
            queues[queue_id] = offset
            self._dirty = True

    def _queues(self, group: str, topic: str) -> dict[int, int]:
        """``topic@group``'s queues in ``_table`` (made if new), remembered in ``_queues_of``; under the lock."""
        key = f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"
        queues = self._table.get(key)
        if queues is None:
            queues = self._table[key] = {}
        topics = self._queues_of.get(group)
        if topics is None:
            topics = self._queues_of[group] = {}
        topics[topic] = queues
        return queues

    def query(self, group: str, topic: str, queue_id: int) -> int | None:
        with self._lock:
            return self._table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}).get(queue_id)

    def offsets_of(self, group: str, topic: str) -> dict[int, int]:
        with self._lock:
            return dict(self._table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}))

    def groups_of_topic(self, topic: str) -> list[str]:
        with self._lock:
            prefix = topic + TOPIC_GROUP_SEPARATOR
            return sorted(key[len(prefix) :] for key in self._table if key.startswith(prefix))

    def entries(self) -> list[tuple[str, str, dict[int, int]]]:
        """Every (topic, group, {queue id: offset}) committed, a copy."""
        with self._lock:
            items = [(key.partition(TOPIC_GROUP_SEPARATOR), dict(queues)) for key, queues in self._table.items()]
        return [(topic, group, queues) for (topic, _, group), queues in items]

    def topics_of_group(self, group: str) -> list[str]:
        with self._lock:
            suffix = TOPIC_GROUP_SEPARATOR + group
            return sorted(key[: -len(suffix)] for key in self._table if key.endswith(suffix))

    def table(self) -> dict[str, dict[int, int]]:
        """A copy of every committed offset, ``"topic@group"`` to {queue id: offset} (GET_ALL_CONSUMER_OFFSET)."""
        with self._lock:
            return {key: dict(queues) for key, queues in self._table.items()}

    def replace_all(self, table: dict[str, dict[int, int]]) -> None:
        """A slave takes its master's offsets (``rocketq.replication.sync``); persisted with the next flush."""
        with self._lock:
            if table != self._table:
                self._table = {key: dict(queues) for key, queues in table.items()}
                self._queues_of.clear()
                self._dirty = True

    def remove_topic(self, topic: str) -> None:
        with self._lock:
            prefix = topic + TOPIC_GROUP_SEPARATOR
            doomed = [k for k in self._table if k.startswith(prefix)]
            for key in doomed:
                del self._table[key]
            if doomed:
                self._queues_of.clear()
                self._dirty = True

    def remove_group(self, group: str) -> None:
        with self._lock:
            suffix = TOPIC_GROUP_SEPARATOR + group
            doomed = [k for k in self._table if k.endswith(suffix)]
            for key in doomed:
                del self._table[key]
            if doomed:
                self._queues_of.clear()
                self._dirty = True

    def persist(self, *, force: bool = False) -> None:
        with self._lock:
            if not (self._dirty or force):
                return
            document = {"offsetTable": {key: dict(queues) for key, queues in self._table.items()}}
            self._dirty = False
        write_json_atomically(self.path, document)
