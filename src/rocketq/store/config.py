"""StoreConfig: every store setting, with RocketMQ's defaults and units in the names or comments."""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass
from pathlib import Path


class FlushDiskType(enum.Enum):
    """When a put is acknowledged: after the append (ASYNC) or after an fsync covers it (SYNC)."""

    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreConfig:
    """Store settings; field names are the snake_case of RocketMQ's ``MessageStoreConfig`` keys."""

    store_path_root_dir: Path
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024  # bytes per CommitLog file
    mapped_file_size_consume_queue: int = 300_000 * 20  # bytes per ConsumeQueue file (300,000 entries)
    max_hash_slot_num: int = 5_000_000  # IndexFile hash slots
    max_index_num: int = 20_000_000  # IndexFile entries per file
    max_message_size: int = 4 * 1024 * 1024  # bytes of one stored record
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    flush_interval_commit_log_ms: int = 500  # ASYNC_FLUSH write-behind interval
    flush_commit_log_least_pages: int = 4  # ASYNC_FLUSH: flush when at least this many 4 KiB pages are dirty
    flush_commit_log_thorough_interval_ms: int = 10_000  # ...or flush everything after this long
    flush_interval_consume_queue_ms: int = 1000  # ConsumeQueue and IndexFile flush interval
    flush_consume_queue_least_pages: int = 2
    sync_flush_timeout_ms: int = 5000  # SYNC_FLUSH: how long a put waits for its fsync
    # retention and disk space (rocketq.store.retention, rocketq.store.disk_space; ratios are shares of the disk)
    file_reserved_time_hours: float = 72.0  # CommitLog files older than this expire
    delete_when: str = "04"  # hour(s) of day when expired files are deleted ("04" or "02;04")
    disk_max_used_space_ratio: float = 0.75  # above it expired files are deleted at any hour
    disk_space_clean_forcibly_ratio: float = 0.85  # above it files are deleted before they expire...
    clean_file_forcibly_enable: bool = True  # ...when this allows it...
    clean_unconsumed_under_pressure: bool = False  # ...but never ones a group has not consumed, unless this
    disk_space_warning_level_ratio: float = 0.90  # refuse puts above it
    clean_resource_interval_ms: int = 10_000  # how often retention runs (every second under disk pressure)
    message_index_enable: bool = True
    message_delay_level: str = DEFAULT_DELAY_LEVELS
    # how long the idle dispatcher thread sleeps: a put that leaves it work wakes it, and so do lone puts'
    # index keys once DEFERRED_WAKE_RECORDS wait; each round takes the GIL from the event loop
    dispatch_interval_ms: int = 1000
    dispatch_inline_max_records: int = 32  # puts this small are dispatched by the putting thread (0: never)
    compiled_dispatch: bool = True  # dispatch through the numba-compiled scan when numba is installed
    dispatch_columnar_min_bytes: int = 2048  # at least this much undispatched log takes the compiled scan
    check_crc_on_recover: bool = True
    enable_consume_queue_ext: bool = False  # ext units beside the ConsumeQueues (filter bit maps)
    mapped_file_size_consume_queue_ext: int = 48 * 1024 * 1024  # bytes per ConsumeQueueExt file
    bit_map_length_consume_queue_ext: int = 64  # bits of a filter bit map (the broker sets its bloom m)

    @property
    def commit_log_dir(self) -> Path:
        return self.store_path_root_dir / "commitlog"

    @property
    def sync_flush(self) -> bool:
        """SYNC_FLUSH: a put is acknowledged only once an fsync covers it."""
        return self.flush_disk_type is FlushDiskType.SYNC_FLUSH

    @property
    def consume_queue_dir(self) -> Path:
        return self.store_path_root_dir / "consumequeue"

    @property
    def consume_queue_ext_dir(self) -> Path:
        return self.store_path_root_dir / "consumequeue_ext"

    @property
    def index_dir(self) -> Path:
        return self.store_path_root_dir / "index"

    @property
    def config_dir(self) -> Path:
        return self.store_path_root_dir / "config"

    @property
    def checkpoint_path(self) -> Path:
        return self.store_path_root_dir / "checkpoint"

    @property
    def abort_path(self) -> Path:
        return self.store_path_root_dir / "abort"

    @property
    def epochs_path(self) -> Path:
        return self.store_path_root_dir / "epochs"

    @property
    def truncate_path(self) -> Path:
        """Where ``MessageStore.truncate_to`` writes the offset it cuts the log back to, until done."""
        return self.store_path_root_dir / "truncate"

    @property
    def lock_path(self) -> Path:
        return self.store_path_root_dir / "lock"

    def delay_levels_ms(self) -> tuple[int, ...]:
        """Delay per level in ms; index 0 is level 1. Units: ms (handy in tests), s, m, h, d."""
        return _parse_delay_levels(self.message_delay_level)


@functools.lru_cache(maxsize=16)
def _parse_delay_levels(text: str) -> tuple[int, ...]:
    return tuple(
        int(token[:-2]) if token.endswith("ms") else int(token[:-1]) * _UNIT_MS[token[-1]] for token in text.split()
    )
