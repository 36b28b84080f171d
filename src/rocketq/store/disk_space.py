"""Disk space: whether the store accepts puts now, and why not (RocketMQ's disk-full running flag).

Puts are refused (DISK_FULL, with a remark saying why) while:

- the store's file system is fuller than ``disk_space_warning_level_ratio`` (RocketMQ's
  ``diskSpaceWarningLevelRatio``, 90 %), or has less room than one more CommitLog file;
- a file a put needs could not be allocated (its CommitLog file, or the ConsumeQueue file its entry
  will land in): ``allocation_failed``;
- retention is under disk pressure and may not delete what it would have to (files holding messages
  some group has not consumed; ``rocketq.store.retention``): ``under_pressure``.

Retention checks the disk every ``clean_resource_interval_ms``. While puts are refused, a put also
checks it again, at most once per ``RECHECK_INTERVAL_S`` of the injected clock (one ``statvfs``), so
writes resume within a second of space coming back rather than at the next retention round.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from rocketq.store.config import StoreConfig

log = logging.getLogger(__name__)

RECHECK_INTERVAL_S = 1.0
"""While puts are refused, how often a put looks at the disk again."""
MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class DiskUsage:
    used_ratio: float
    """Used share of the file system, counting blocks reserved for root as free, as RocketMQ does
    (Java's ``getFreeSpace``)."""
    available: int
    """Bytes the store may still allocate (not counting blocks reserved for root)."""


def disk_usage(path: os.PathLike[str] | str) -> DiskUsage:
    usage = os.statvfs(path)
    used = 0.0 if usage.f_blocks == 0 else 1 - usage.f_bfree / usage.f_blocks
    return DiskUsage(used, usage.f_bavail * usage.f_frsize)


class DiskSpace:
    """Thread safety: any thread may call any method (states are replaced whole; a race only makes
    two threads look at the disk at once)."""

    def __init__(self, config: StoreConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self._config = config
        self._clock = clock
        self.refusal: str | None = None
        """Why puts are refused now (the remark they are refused with); None while they are accepted."""
        self._full: str | None = None
        self._pressure: str | None = None
        self._cause = ""  # what the log last said: "" (accepted), "full" or "pressure"
        self._checked_at = float("-inf")

    def check(self) -> DiskUsage:
        """Look at the disk now and decide whether puts are accepted; returns what it found."""
        config = self._config
        usage = disk_usage(config.store_path_root_dir)
        self._checked_at = self._clock()
        root = config.store_path_root_dir
        if usage.used_ratio > config.disk_space_warning_level_ratio:
            self._full = (
                f"disk full: {usage.used_ratio:.0%} of the disk of {root} is used, above"
                f" diskSpaceWarningLevelRatio ({config.disk_space_warning_level_ratio:.0%})"
            )
        elif usage.available < config.mapped_file_size_commit_log:
            self._full = (
                f"disk full: {usage.available / MIB:.1f} MiB free on the disk of {root}, less than one more"
                f" CommitLog file ({config.mapped_file_size_commit_log / MIB:g} MiB)"
            )
        else:
            self._full = None
        if self._pressure is not None and usage.used_ratio <= config.disk_space_clean_forcibly_ratio:
            self._pressure = None
        self._decide()
        return usage

    def admit(self) -> str | None:
        """On the put path: None when puts are accepted, else why not. Free while they are; while they
        are not, looks at the disk again at most once per ``RECHECK_INTERVAL_S``."""
        refusal = self.refusal  # (a local: check() changes the attribute)
        if refusal is not None and self._clock() - self._checked_at >= RECHECK_INTERVAL_S:
            self.check()
            refusal = self.refusal
        return refusal

    def allocation_failed(self, error: Exception) -> str:
        """A file a put needed could not be allocated: refuse puts until the disk has room again (the
        next check decides). Returns the remark."""
        self._full = f"disk full: {error}"
        self._checked_at = self._clock()
        self._decide()
        return self._full

    def under_pressure(self, reason: str | None) -> None:
        """Retention's verdict: ``reason`` when it had to free space but may not (puts are refused with
        it until a check finds the disk below ``disk_space_clean_forcibly_ratio``, or retention frees
        space), None when it is not held back."""
        self._pressure = reason
        self._decide()

    @property
    def pressure(self) -> str | None:
        """Retention's reason for refusing puts (``under_pressure``), if it has one now."""
        return self._pressure

    def _decide(self) -> None:
        """Set ``refusal``; log once per change of cause (not per check)."""
        refusal = self._full or self._pressure
        cause = "full" if self._full else "pressure" if self._pressure else ""
        if refusal is not None:
            refusal += ": puts refused, reads served"
        if cause != self._cause:
            if not cause:
                log.warning("disk space OK again on %s: puts accepted", self._config.store_path_root_dir)
            else:
                log.error("%s", refusal)
            self._cause = cause
        self.refusal = refusal
