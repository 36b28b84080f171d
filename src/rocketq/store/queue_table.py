"""The store's ConsumeQueues by topic and queue id, and ``config/consumeQueueRegistry.json``: each
queue's max offset as last written, so a start finds queues whose files are missing or behind (lost,
or deleted by hand) and rebuilds them from the CommitLog."""

from __future__ import annotations

import errno
import logging
import threading
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Final

from rocketq.common.record import SysFlag
from rocketq.store.config import StoreConfig
from rocketq.store.config_file import read_json, write_json_atomically
from rocketq.store.consume_queue import ConsumeQueue
from rocketq.store.consume_queue_ext import open_ext
from rocketq.store.results import MessageToStore

log = logging.getLogger(__name__)

REGISTRY_FILE = "consumeQueueRegistry.json"
_TRANSACTION_MASK: Final = SysFlag.TRANSACTION_MASK
_PREPARED: Final = SysFlag.TRANSACTION_PREPARED_TYPE  # the transaction halves get no ConsumeQueue entry
_ROLLED_BACK: Final = SysFlag.TRANSACTION_ROLLBACK_TYPE
_BITS: Final = 63  # queue ids below this are collected as bits


class QueueTable:
    """Thread safety: ``queues`` may be read (``get``) by any thread; changes take the lock."""

    def __init__(self, config: StoreConfig) -> None:
        self._config = config
        self.queues: dict[tuple[str, int], ConsumeQueue] = {}
        self._lock = threading.Lock()
        self._registry_dirty = False

    def load(self) -> None:
        """Open every queue found on disk (their files mapped, not recovered yet)."""
        root = self._config.consume_queue_dir
        root.mkdir(parents=True, exist_ok=True)
        for topic_dir in sorted(p for p in root.iterdir() if p.is_dir()):
            for queue_dir in sorted(p for p in topic_dir.iterdir() if p.is_dir() and p.name.isdigit()):
                self._new_queue(topic_dir.name, int(queue_dir.name)).load()

    def _new_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        config = self._config
        ext_size, enabled = config.mapped_file_size_consume_queue_ext, config.enable_consume_queue_ext
        ext = open_ext(config.consume_queue_ext_dir, topic, queue_id, ext_size, enabled=enabled)
        queue = ConsumeQueue(topic, queue_id, config.consume_queue_dir, config.mapped_file_size_consume_queue, ext)
        self.queues[(topic, queue_id)] = queue
        return queue

    def get_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        queue = self.queues.get((topic, queue_id))
        if queue is None:
            with self._lock:
                queue = self.queues.get((topic, queue_id)) or self._new_queue(topic, queue_id)
                self._registry_dirty = True
        return queue

    def all(self) -> list[ConsumeQueue]:
        with self._lock:
            return list(self.queues.values())

    def remove_topic(self, topic: str) -> list[tuple[str, int]]:
        """Delete every queue of ``topic`` with its files and folders; returns their keys."""
        with self._lock:
            doomed = [key for key in self.queues if key[0] == topic]
            for key in doomed:
                self.queues.pop(key).destroy()
            self._registry_dirty = True
        for topic_dir in (self._config.consume_queue_dir / topic, self._config.consume_queue_ext_dir / topic):
            for path in sorted(topic_dir.glob("*"), reverse=True):
                if path.is_dir():
                    _remove_folder(path)
            if topic_dir.exists():
                _remove_folder(topic_dir)
        return doomed

    def behind_registry(self) -> list[str]:
        """``topic-queueId`` of every queue the registry lists that is missing or ends before it says."""
        registry = read_json(self._config.config_dir / REGISTRY_FILE) or {}
        behind: list[str] = []
        for topic, table in registry.get("queues", {}).items():
            for queue_id, max_offset in table.items():
                queue = self.queues.get((topic, int(queue_id)))
                if queue is None or queue.max_offset < int(max_offset):
                    behind.append(f"{topic}-{queue_id}")
        return behind

    def mark_changed(self) -> None:
        self._registry_dirty = True

    def write_registry(self, *, force: bool = False) -> None:
        """Write the registry when a queue was added or removed since the last write (or ``force``)."""
        if not (self._registry_dirty or force):
            return
        self._registry_dirty = False
        table: dict[str, dict[str, int]] = {}
        with self._lock:
            for (topic, queue_id), queue in self.queues.items():
                table.setdefault(topic, {})[str(queue_id)] = queue.max_offset
        write_json_atomically(self._config.config_dir / REGISTRY_FILE, {"queues": table})

    def close(self) -> None:
        with self._lock:
            for queue in self.queues.values():
                queue.close()
            self.queues.clear()


def gets_no_entry(sys_flag: int) -> bool:
    """A transaction half: stored, but without a ConsumeQueue entry."""
    transaction = sys_flag & _TRANSACTION_MASK
    return transaction in (_PREPARED, _ROLLED_BACK)


def queues_of(messages: Sequence[MessageToStore]) -> tuple[str | None, int, Collection[tuple[str, int]]]:
    """Where a batch's ConsumeQueue entries go: the topic and queue id of its first message that gets
    one (None when none does: transaction halves), and the other queues that get some. On the put
    path: the queues of one topic are collected as bits (no tuple, no hashing per message)."""
    topic: str | None = None
    queue_id = 0
    seen = 0  # bit q: queue q of ``topic`` gets entries
    for message in messages:
        if gets_no_entry(message.sys_flag):
            continue
        if topic is None:
            topic, queue_id = message.topic, message.queue_id
        elif message.topic != topic or not 0 <= message.queue_id < _BITS:
            others = {(m.topic, m.queue_id) for m in messages if not gets_no_entry(m.sys_flag)}
            others.discard((topic, queue_id))
            return topic, queue_id, others
        seen |= 1 << message.queue_id
    seen &= ~(1 << queue_id)
    if topic is None or not seen:
        return topic, queue_id, ()
    return topic, queue_id, [(topic, other) for other in range(_BITS) if seen >> other & 1]


def _remove_folder(path: Path) -> None:
    """Remove an emptied queue folder; one that still holds a file is left in place and said so (a file a
    reader still maps is deleted when the reader lets it go, so its folder outlives the topic, empty)."""
    try:
        path.rmdir()
    except OSError as error:
        if error.errno != errno.ENOTEMPTY:
            raise
        log.info("%s: not removed with its topic, a file in it is still in use", path)
