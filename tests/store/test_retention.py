"""Retention under disk pressure on a real small disk (a tmpfs): files go before they expire only when
every group has consumed them (or the operator opted in), loudly; otherwise puts are refused, saying
whose messages are kept. Expiry by age is unchanged."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.store import MessageStore, PutStatus, StoreConfig

from ..disks import fill, mounted_tmpfs
from .conftest import message, small_config

FILE = 256 * 1024


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "disk", "8m") as mount_point:
        yield mount_point


def not_this_hour(now: float) -> str:
    return f"{(time.localtime(now).tm_hour + 12) % 24:02d}"


def pressure_config(disk: Path, **overrides: object) -> StoreConfig:
    """256 KiB CommitLog files kept 72 h, deleted at an hour that is not now; forced cleaning above 85 %
    of the disk, puts refused only above 97 %; retention runs when the test says."""
    settings: dict[str, object] = {
        "mapped_file_size_commit_log": FILE,
        "mapped_file_size_consume_queue": 20 * 1000,
        "message_index_enable": False,
        "file_reserved_time_hours": 72.0,
        "delete_when": not_this_hour(time.time()),
        "disk_space_clean_forcibly_ratio": 0.85,
        "disk_space_warning_level_ratio": 0.97,
        "clean_resource_interval_ms": 3_600_000,
        **overrides,
    }
    return small_config(disk / "store", **settings)


def write_files(store: MessageStore, count: int) -> None:
    """Put 1 KiB messages until the CommitLog has ``count`` files."""
    while len(store.commit_log.files.files) < count:
        assert store.put_message(message(body=bytes(1024))).ok
    store.dispatch_now()


def press(disk: Path, used: float = 0.88) -> None:
    """Fill the disk up to ``used`` of its size."""
    usage = os.statvfs(disk)
    fill(disk, leave=int(usage.f_blocks * usage.f_frsize * (1 - used)))


class ConsumedUpTo:
    """The broker's answer (``UnconsumedGuard``) for one group that has consumed the messages below
    ``offset`` of the CommitLog."""

    def __init__(self, offset: int) -> None:
        self.offset = offset

    def __call__(self, end_offset: int) -> str | None:
        return None if end_offset <= self.offset else f"group G (topic TopicA, queue 0, from {self.offset})"


def test_disk_pressure_keeps_unconsumed_files_refuses_puts_and_resumes_once_consumed(
    disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with MessageStore(pressure_config(disk)) as store:
        write_files(store, 6)
        guard = ConsumedUpTo(0)
        store.set_unconsumed_guard(guard)
        press(disk)
        assert store.retention.run() == 0
        assert store.commit_log.min_offset == 0
        refused = store.put_message(message(body=b"refused"))
        assert refused.status is PutStatus.DISK_FULL
        assert "disk pressure" in (refused.remark or "") and "group G" in (refused.remark or "")
        assert "before its time" not in caplog.text

        guard.offset = 2 * FILE  # the group has consumed the first two files
        assert store.retention.run() == 2
        assert store.commit_log.min_offset == 2 * FILE
        early = [r for r in caplog.records if "before its time" in r.getMessage()]
        assert len(early) == 2 and {r.levelname for r in early} == {"WARNING"}
        assert "every group had consumed its messages" in early[0].getMessage()
        assert store.put_message(message(body=b"accepted")).ok  # below 85 % again


def test_an_operator_who_opts_in_gets_unconsumed_files_deleted_under_pressure_loudly(
    disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with MessageStore(pressure_config(disk, clean_unconsumed_under_pressure=True)) as store:
        write_files(store, 6)
        store.set_unconsumed_guard(ConsumedUpTo(0))
        press(disk)
        assert store.retention.run() == 5  # all but the file being written
        early = [r for r in caplog.records if "before its time" in r.getMessage()]
        assert len(early) == 5 and {r.levelname for r in early} == {"WARNING"}
        assert "group G" in early[0].getMessage() and "has not consumed" in early[0].getMessage()
        assert store.put_message(message(body=b"accepted")).ok


def test_without_disk_pressure_young_files_stay(disk: Path) -> None:
    with MessageStore(pressure_config(disk)) as store:
        write_files(store, 4)
        assert store.retention.run() == 0
        assert store.put_message(message(body=b"accepted")).ok


def test_without_clean_file_forcibly_enable_nothing_goes_before_its_time(disk: Path) -> None:
    with MessageStore(pressure_config(disk, clean_file_forcibly_enable=False)) as store:
        write_files(store, 6)
        store.set_unconsumed_guard(ConsumedUpTo(10 * FILE))
        press(disk)
        assert store.retention.run() == 0
        assert store.put_message(message(body=b"accepted")).ok  # not refused below the warning level


def test_expired_files_go_at_the_delete_hour_even_when_unconsumed_with_a_warning(
    disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    later = time.time() + 73 * 3600  # every file is older than fileReservedTime then
    config = pressure_config(disk, delete_when=f"{time.localtime(later).tm_hour:02d}")
    with MessageStore(config) as store:
        write_files(store, 4)
        store.set_unconsumed_guard(ConsumedUpTo(0))
        assert store.retention.run(now=later - 3600 * 2) == 0  # not the hour yet
        assert store.retention.run(now=later) == 3
        expired = [r.getMessage() for r in caplog.records if "expired" in r.getMessage()]
        assert len(expired) == 3 and "has not consumed" in expired[0]
        assert "before its time" not in caplog.text
