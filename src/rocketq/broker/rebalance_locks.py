"""Queue locks for orderly consumption (RebalanceLockManager), as pure state: no I/O, time passed in.

A lock is keyed by (consumer group, message queue) and held by one client id. It lives
``max_live_ms`` after its last renewal; locking again by the holder renews it, and once it has
expired any client of the group may take it over (docs/protocol.md#lock_batch_mq-41-and-unlock_batch_mq-42).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from rocketq.protocol.bodies import MessageQueue

log = logging.getLogger(__name__)

DEFAULT_MAX_LIVE_MS = 60_000


@dataclass(slots=True)
class _Lock:
    client_id: str
    renewed_at_ms: int


class RebalanceLockTable:
    """Locks of every group; ``now_ms`` is any monotonic clock in milliseconds."""

    def __init__(self, max_live_ms: int = DEFAULT_MAX_LIVE_MS) -> None:
        self.max_live_ms = max_live_ms
        self._groups: dict[str, dict[MessageQueue, _Lock]] = {}

    def _expired(self, lock: _Lock, now_ms: int) -> bool:
        return now_ms - lock.renewed_at_ms > self.max_live_ms

    def try_lock_batch(
        self, group: str, client_id: str, queues: Iterable[MessageQueue], now_ms: int
    ) -> list[MessageQueue]:
        """Lock or renew each queue for ``client_id``; returns the queues it now holds, in request order.

        A queue held by another client whose lock has not expired is left alone and not returned.
        """
        locks = self._groups.setdefault(group, {})
        held: list[MessageQueue] = []
        for queue in dict.fromkeys(queues):
            lock = locks.get(queue)
            if lock is None:
                locks[queue] = _Lock(client_id, now_ms)
            elif lock.client_id == client_id:
                lock.renewed_at_ms = now_ms
            elif self._expired(lock, now_ms):
                log.info("group %s: lock of %s expired for %s, now held by %s", group, queue, lock.client_id, client_id)
                locks[queue] = _Lock(client_id, now_ms)
            else:
                continue
            held.append(queue)
        if not locks:
            del self._groups[group]
        return held

    def unlock_batch(self, group: str, client_id: str, queues: Iterable[MessageQueue]) -> None:
        """Release the queues ``client_id`` holds; locks held by others stay."""
        locks = self._groups.get(group)
        if locks is None:
            return
        for queue in queues:
            lock = locks.get(queue)
            if lock is not None and lock.client_id == client_id:
                del locks[queue]
        if not locks:
            del self._groups[group]

    def holder(self, group: str, queue: MessageQueue, now_ms: int) -> str | None:
        """The client id holding an unexpired lock on ``queue``, or None."""
        lock = self._groups.get(group, {}).get(queue)
        return lock.client_id if lock is not None and not self._expired(lock, now_ms) else None

    def is_locked_by(self, group: str, queue: MessageQueue, client_id: str, now_ms: int) -> bool:
        return self.holder(group, queue, now_ms) == client_id
