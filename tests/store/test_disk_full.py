"""A full disk: puts are refused with DISK_FULL, reads keep working, and writes resume when space returns.

Uses a real 2 MiB tmpfs mounted for the test (needs root, as in CI here); skipped with the reason
where mounting is not allowed.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.protocol.batch import BatchItem, encode_batch
from rocketq.store import BatchToStore, FlushDiskType, GetStatus, MessageStore, PutStatus, StoreConfig
from rocketq.store.mapped_file import file_name

from ..disks import mounted_tmpfs
from .conftest import message, small_config


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    with mounted_tmpfs(tmp_path / "disk", "2m") as mount_point:
        yield mount_point


FLUSH_TYPES = pytest.mark.parametrize("flush", list(FlushDiskType), ids=lambda flush: flush.value)


def tiny_disk_config(tiny_disk: Path, **overrides: object) -> StoreConfig:
    """A store on the tiny disk: 256 KiB CommitLog files, full-disk detection only at 100 %, no index."""
    return small_config(
        tiny_disk / "store",
        mapped_file_size_commit_log=256 * 1024,
        disk_space_warning_level_ratio=1.0,
        disk_space_clean_forcibly_ratio=1.0,
        disk_max_used_space_ratio=1.0,
        message_index_enable=False,
        **overrides,
    )


@FLUSH_TYPES
def test_full_disk_refuses_puts_serves_reads_and_recovers(tiny_disk: Path, flush: FlushDiskType) -> None:
    config = tiny_disk_config(tiny_disk, clean_resource_interval_ms=50, flush_disk_type=flush)
    with MessageStore(config) as store:
        ballast = tiny_disk / "ballast"
        with ballast.open("wb") as handle:  # leave room for less than one more CommitLog file
            handle.write(bytes(2 * 1024 * 1024 - 256 * 1024 - 64 * 1024 - 40 * 1024))
        acknowledged = 0
        status = PutStatus.PUT_OK
        for _ in range(2000):
            result = store.put_message(message(body=bytes(1000)))
            status = result.status
            if not result.ok:
                break
            acknowledged += 1
        assert status is PutStatus.DISK_FULL
        assert acknowledged > 0
        assert store.put_message(message(body=b"still full")).status is PutStatus.DISK_FULL
        store.dispatch_now()
        with store.get_messages("TopicA", 0, 0, 10_000) as result:
            assert result.status is GetStatus.FOUND and result.message_count == acknowledged
        ballast.unlink()
        store.retention.run()
        assert not store.disk_full
        assert store.put_message(message(body=b"space again")).ok
        store.dispatch_now()
        assert store.get_max_offset_in_queue("TopicA", 0) == acknowledged + 1


@FLUSH_TYPES
def test_a_batch_that_cannot_get_its_files_leaves_no_empty_file_behind(tiny_disk: Path, flush: FlushDiskType) -> None:
    """A batch needing two new files when only one fits is refused whole, and the one file that was
    made for it is removed again: otherwise the next put would land there, after a file that has no
    end-of-file filler, and recovery would cut the log at that gap."""
    config = tiny_disk_config(tiny_disk, flush_disk_type=flush)
    with MessageStore(config) as store:
        assert store.put_message(message(body=bytes(1000))).ok
        free = shutil.disk_usage(tiny_disk).free
        (tiny_disk / "ballast").write_bytes(bytes(max(0, free - 256 * 1024 - 64 * 1024)))  # room for one file
        big_batch = [message(body=bytes(100_000)) for _ in range(6)]  # ~600 KB: needs two more files
        assert store.put_messages(big_batch).status is PutStatus.DISK_FULL
        assert len(store.commit_log.files.files) == 1
        (tiny_disk / "ballast").unlink()
        store.retention.run()
        after = store.put_message(message(body=b"after"))
        assert after.ok and after.physical_offsets[0] < 256 * 1024  # still in the first file
    with MessageStore(config) as store:
        record = store.lookup_message(after.physical_offsets[0])
        assert record is not None and record.body == b"after"


@FLUSH_TYPES
def test_a_wire_batch_that_cannot_get_its_files_is_refused_whole(tiny_disk: Path, flush: FlushDiskType) -> None:
    """The compiled append of a producer's batch reserves its files first, like ``put_messages``: a
    batch that cannot get them is refused with DISK_FULL and nothing of it is written."""
    config = tiny_disk_config(tiny_disk, flush_disk_type=flush)
    with MessageStore(config) as store:
        assert store.put_message(message(body=bytes(1000))).ok
        before = store.commit_log.max_offset
        free = shutil.disk_usage(tiny_disk).free
        (tiny_disk / "ballast").write_bytes(bytes(max(0, free - 256 * 1024 - 64 * 1024)))  # room for one file
        items = encode_batch([BatchItem(bytes(100_000), "TAGS\x01t") for _ in range(6)])  # needs two more files
        measured = store.measure_batch(BatchToStore(topic="TopicA", queue_id=0, items=items, properties_suffix=""))
        if measured is None:
            pytest.skip("the compiled append is not available (numba)")
        assert store.put_batch(measured).status is PutStatus.DISK_FULL
        assert len(store.commit_log.files.files) == 1 and store.commit_log.max_offset == before
        (tiny_disk / "ballast").unlink()
        store.retention.run()
        again = store.put_batch(measured)
        assert again.ok and again.queue_offsets == list(range(1, 7))
        store.dispatch_now()
        assert store.get_max_offset_in_queue("TopicA", 0) == 7


def fill_the_disk(disk: Path) -> Path:
    """Write a ballast file until the filesystem has no block left."""
    ballast = disk / "ballast"
    with ballast.open("wb", buffering=0) as handle:
        chunk = bytes(64 * 1024)
        while chunk:
            try:
                handle.write(chunk)
            except OSError:
                chunk = chunk[: len(chunk) // 2]
    return ballast


def sparse_sync_config(tiny_disk: Path) -> StoreConfig:
    """A SYNC_FLUSH store on the tiny disk whose first CommitLog file is sparse, as a filesystem without
    fallocate leaves it: its blocks are taken only when it is written."""
    config = tiny_disk_config(tiny_disk, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    config.commit_log_dir.mkdir(parents=True)
    with (config.commit_log_dir / file_name(0)).open("wb") as sparse:
        sparse.truncate(config.mapped_file_size_commit_log)
    return config


@pytest.mark.parametrize("count", [1, 4])
def test_sync_flush_write_that_finds_the_disk_full_publishes_nothing(tiny_disk: Path, count: int) -> None:
    """SYNC_FLUSH appends write with pwrite. A CommitLog file the filesystem could not allocate up front
    (without fallocate it stays sparse) can run out of blocks under such a write: the put is refused
    with DISK_FULL, nothing of it becomes visible, its queue offsets are not used up, and puts resume
    when space returns."""
    config = sparse_sync_config(tiny_disk)
    with MessageStore(config) as store:
        assert store.put_message(message(body=b"first")).ok
        end = store.commit_log.max_offset
        ballast = fill_the_disk(tiny_disk)
        refused = store.put_messages([message(body=bytes(20_000)) for _ in range(count)])
        assert refused.status is PutStatus.DISK_FULL
        assert store.commit_log.max_offset == end
        ballast.unlink()
        store.retention.run()
        after = store.put_message(message(body=b"after"))
        assert after.ok and after.queue_offsets == [1] and after.physical_offsets == [end]
        store.wait_flushed(after)
    with MessageStore(config) as store:
        store.dispatch_now()
        assert store.get_max_offset_in_queue("TopicA", 0) == 2
        stored = [store.lookup_message(offset) for offset in (0, end)]
        assert [record.body if record else None for record in stored] == [b"first", b"after"]


def test_sync_flush_batch_whose_write_finds_the_disk_full_drops_the_file_it_rolled_into(tiny_disk: Path) -> None:
    """A staged batch that rolls into a new file (allocated in full) but whose part in the current,
    sparse file finds no blocks is refused whole: the new file is removed again, so the next put does
    not land in it after a file that has no end-of-file filler."""
    config = sparse_sync_config(tiny_disk)
    with MessageStore(config) as store:
        assert store.put_message(message(body=b"first")).ok
        end = store.commit_log.max_offset
        free = shutil.disk_usage(tiny_disk).free
        (tiny_disk / "ballast").write_bytes(bytes(max(0, free - 256 * 1024 - 64 * 1024)))  # room for one file
        big_batch = [message(body=bytes(60_000)) for _ in range(6)]  # ~360 KB: the rest of file 0, then file 1
        assert store.put_messages(big_batch).status is PutStatus.DISK_FULL
        assert len(store.commit_log.files.files) == 1 and store.commit_log.max_offset == end
        (tiny_disk / "ballast").unlink()
        store.retention.run()
        after = store.put_message(message(body=b"after"))
        assert after.ok and after.queue_offsets == [1] and after.physical_offsets == [end]
        store.wait_flushed(after)
    with MessageStore(config) as store:
        record = store.lookup_message(end)
        assert record is not None and record.body == b"after"
