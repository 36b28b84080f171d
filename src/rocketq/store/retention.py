"""Retention: delete expired CommitLog files, then the ConsumeQueue and index files that only pointed
into them; detect a full disk (mirrors ``DefaultMessageStore.CleanCommitLogService``).

A file is deleted when it is older than ``file_reserved_time_hours`` and the hour is one of
``delete_when``, or at once (oldest first, whatever its age) when the disk is fuller than
``disk_max_used_space_ratio``. The file being written is never deleted. Deleting a file that some
ConsumeQueue still points into is logged with the queues it affects: those messages are gone.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING

from rocketq.store.mapped_file import MappedFile

if TYPE_CHECKING:
    from rocketq.store.message_store import MessageStore

log = logging.getLogger(__name__)

DELETE_FILES_PER_RUN = 10


class Retention:
    def __init__(self, store: MessageStore) -> None:
        self._store = store
        self.deleted_files = 0

    def run(self, *, now: float | None = None, force: bool = False) -> int:
        """One retention round; returns how many CommitLog files were deleted."""
        store = self._store
        config = store.config
        now = time.time() if now is None else now
        ratio = store.disk_used_ratio()
        store.disk_full = ratio > config.disk_full_ratio or not self._room_for_next_file()
        crowded = ratio > config.disk_max_used_space_ratio
        hour = time.strftime("%H", time.localtime(now))
        scheduled = hour in config.delete_when.split(";")
        if not (scheduled or crowded or force):
            return 0
        max_age = config.file_reserved_time_hours * 3600
        budget = [DELETE_FILES_PER_RUN]

        def should_delete(mapped: MappedFile) -> bool:
            if budget[0] <= 0:
                return False
            if not (crowded or now - mapped.modified_time() > max_age):
                return False
            budget[0] -= 1
            self._warn_if_referenced(mapped)
            return True

        deleted = store.commit_log.files.delete_files(should_delete)
        if deleted:
            minimum = store.commit_log.min_offset
            log.info("retention: deleted %d commit log files; data now starts at %d", deleted, minimum)
            for queue in store.queues():
                queue.delete_before(minimum)
            if store.index is not None:
                store.index.delete_before(minimum)
            self.deleted_files += deleted
        return deleted

    def _room_for_next_file(self) -> bool:
        usage = os.statvfs(self._store.config.store_path_root_dir)
        return usage.f_bavail * usage.f_frsize >= self._store.config.mapped_file_size_commit_log

    def _warn_if_referenced(self, mapped: MappedFile) -> None:
        referenced = []
        for queue in self._store.queues():
            if queue.max_offset <= queue.min_offset:
                continue
            first = queue.entry(queue.min_offset)
            if first is not None and first[0] < mapped.end_offset:
                referenced.append(f"{queue.topic}-{queue.queue_id}")
        if referenced:
            log.warning(
                "retention: deleting %s although consume queues still point into it: %s",
                mapped.path.name,
                ", ".join(referenced[:20]) + (" ..." if len(referenced) > 20 else ""),
            )
