"""Retention: delete old CommitLog files, then the ConsumeQueue and index files that only pointed into
them (RocketMQ's ``CleanCommitLogService`` and ``CleanConsumeQueueService``), and keep the store's
view of its disk up to date (``DiskSpace``).

Files are deleted oldest first, never the one being written, at most ``DELETE_FILES_PER_RUN`` per run:

- **expired** files (last written more than ``file_reserved_time_hours`` ago) at the hours listed in
  ``delete_when``, or at any hour while the disk is fuller than ``disk_max_used_space_ratio``;
- **before they expire**, while the disk is fuller than ``disk_space_clean_forcibly_ratio`` (or than
  ``disk_space_warning_level_ratio``) and ``clean_file_forcibly_enable`` allows it. This is where
  rocketq differs from RocketMQ: a file holding messages some subscription group has not consumed yet
  (the broker's ``UnconsumedGuard`` answers that) is not deleted unless
  ``clean_unconsumed_under_pressure`` is set. Retention stops there and puts are refused instead, with
  a remark naming the group (``DiskSpace.under_pressure``), until the group catches up or space is
  freed. Every file deleted before its time is logged as a WARNING, with whose messages it held.

Under disk pressure the store runs retention every second rather than every
``clean_resource_interval_ms``, so writes resume soon after the consumers catch up.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rocketq.store.disk_space import DiskSpace, DiskUsage
from rocketq.store.mapped_file import MappedFile

if TYPE_CHECKING:
    from rocketq.store.message_store import MessageStore

log = logging.getLogger(__name__)

DELETE_FILES_PER_RUN = 10
"""Files one run deletes at most (RocketMQ's DELETE_FILES_BATCH_MAX)."""

UnconsumedGuard = Callable[[int], "str | None"]
"""Asked before a CommitLog file is deleted early, with the offset where it ends: who has not consumed
a message stored below that offset (``"group G (topic T, queue 1, from offset 5 of 9)"``), or None.
The broker provides it (``MessageStore.set_unconsumed_guard``); without one, nothing is protected."""


class Retention:
    def __init__(self, store: MessageStore, space: DiskSpace) -> None:
        self._store = store
        self._space = space
        self.guard: UnconsumedGuard | None = None
        self.deleted_files = 0
        self.deleted_early = 0
        """Files deleted before they expired (under disk pressure)."""

    def run(self, *, now: float | None = None, force: bool = False) -> int:
        """One retention round; returns how many CommitLog files were deleted. ``now``: wall-clock
        seconds (file ages are modification times); ``force``: delete expired files whatever the hour."""
        store = self._store
        config = store.config
        now = time.time() if now is None else now
        usage = self._space.check()
        ratio = usage.used_ratio
        scheduled = force or time.strftime("%H", time.localtime(now)) in config.delete_when.split(";")
        crowded = ratio > config.disk_max_used_space_ratio
        pressed = config.clean_file_forcibly_enable and (
            ratio > config.disk_space_clean_forcibly_ratio or ratio > config.disk_space_warning_level_ratio
        )
        if not (scheduled or crowded or pressed):
            self._space.under_pressure(None)
            return 0
        max_age = config.file_reserved_time_hours * 3600
        budget = [DELETE_FILES_PER_RUN]
        held_back: list[str] = []

        def should_delete(mapped: MappedFile) -> bool:
            if budget[0] <= 0:
                return False
            age = now - mapped.modified_time()
            holder = self.guard(mapped.end_offset) if self.guard is not None else None
            if age > max_age:
                self._log_expired(mapped, holder)
            elif not pressed:
                return False
            elif holder is not None and not config.clean_unconsumed_under_pressure:
                held_back.append(holder)
                return False
            else:
                self._log_early(mapped, usage, age, holder)
                self.deleted_early += 1
            budget[0] -= 1
            return True

        deleted = store.commit_log.files.delete_files(should_delete)
        self._space.under_pressure(self._pressure_remark(usage, held_back[0]) if held_back else None)
        if deleted:
            minimum = store.commit_log.min_offset
            log.info("retention: deleted %d commit log files; data now starts at %d", deleted, minimum)
            for queue in store.queues():
                queue.delete_before(minimum)
            if store.index is not None:
                store.index.delete_before(minimum)
            self.deleted_files += deleted
            self._space.check()
        return deleted

    @property
    def under_pressure(self) -> bool:
        """Puts are refused because retention may not delete what it would have to."""
        return self._space.pressure is not None

    def _pressure_remark(self, usage: DiskUsage, holder: str) -> str:
        config = self._store.config
        return (
            f"disk pressure: {usage.used_ratio:.0%} of the disk is used (diskSpaceCleanForciblyRatio"
            f" {config.disk_space_clean_forcibly_ratio:.0%}) and the oldest CommitLog file holds messages that"
            f" {holder} has not consumed; they are kept (cleanUnconsumedUnderPressure=false) until consumed"
            " or space is freed"
        )

    def _log_early(self, mapped: MappedFile, usage: DiskUsage, age: float, holder: str | None) -> None:
        config = self._store.config
        log.warning(
            "retention: disk pressure (%.0f%% used, diskSpaceCleanForciblyRatio %.0f%%): deleting %s before its"
            " time (written %.1f h ago, fileReservedTime %g h)%s",
            usage.used_ratio * 100,
            config.disk_space_clean_forcibly_ratio * 100,
            mapped.path.name,
            age / 3600,
            config.file_reserved_time_hours,
            f"; it holds messages that {holder} has not consumed (cleanUnconsumedUnderPressure=true)"
            if holder
            else "; every group had consumed its messages",
        )

    def _log_expired(self, mapped: MappedFile, holder: str | None) -> None:
        if holder is not None:
            log.warning(
                "retention: %s expired (fileReservedTime %g h) with messages that %s has not consumed",
                mapped.path.name,
                self._store.config.file_reserved_time_hours,
                holder,
            )
            return
        referenced = []
        for queue in self._store.queues():
            if queue.max_offset <= queue.min_offset:
                continue
            first = queue.entry(queue.min_offset)
            if first is not None and first[0] < mapped.end_offset:
                referenced.append(f"{queue.topic}-{queue.queue_id}")
        if referenced:
            log.warning(
                "retention: deleting %s (expired) although consume queues still point into it: %s",
                mapped.path.name,
                ", ".join(referenced[:20]) + (" ..." if len(referenced) > 20 else ""),
            )
