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

from ..disks import fill, mounted_tmpfs, resize_tmpfs
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


@FLUSH_TYPES
def test_messages_and_wire_batches_put_together_are_refused_whole(tiny_disk: Path, flush: FlushDiskType) -> None:
    """``put_together`` (a transaction's ops and the batches its commit makes visible) reserves the files
    of all its parts first: on a disk with room for one more file it stores nothing, then all of it."""
    config = tiny_disk_config(tiny_disk, flush_disk_type=flush)
    with MessageStore(config) as store:
        assert store.put_message(message(body=bytes(1000))).ok
        before = store.commit_log.max_offset
        free = shutil.disk_usage(tiny_disk).free
        (tiny_disk / "ballast").write_bytes(bytes(max(0, free - 256 * 1024 - 64 * 1024)))  # room for one file
        items = encode_batch([BatchItem(bytes(100_000), "TAGS\x01t") for _ in range(3)])
        measured = [
            store.measure_batch(BatchToStore(topic="TopicB", queue_id=queue, items=items, properties_suffix=""))
            for queue in (0, 1)
        ]
        if None in measured:
            pytest.skip("the compiled append is not available (numba)")
        batches = [m for m in measured if m is not None]
        ops = [message(topic="Ops", body=b"op")]
        assert store.put_together(ops, batches).status is PutStatus.DISK_FULL  # each part alone would fit
        assert len(store.commit_log.files.files) == 1 and store.commit_log.max_offset == before
        (tiny_disk / "ballast").unlink()
        store.retention.run()
        together = store.put_together(ops, batches)
        assert together.ok and together.queue_offsets == [0, 0, 1, 2, 0, 1, 2]
        assert together.physical_offsets == sorted(together.physical_offsets)  # in order, across three files
    with MessageStore(config) as store:
        assert [r.topic for r in (store.lookup_message(o) for o in together.physical_offsets) if r] == [
            "Ops",
            *["TopicB"] * 6,
        ]


class FakeClock:
    """Monotonic seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def queue_file_config(disk: Path, **overrides: object) -> StoreConfig:
    """256 KiB CommitLog files and 200 KB ConsumeQueue files (10,000 entries) on the tiny disk."""
    return tiny_disk_config(disk, mapped_file_size_consume_queue=200_000, **overrides)


def wire_batch(queue_id: int, count: int) -> BatchToStore:
    items = encode_batch([BatchItem(f"w{i}".encode(), "TAGS\x01t") for i in range(count)])
    return BatchToStore(topic="TopicA", queue_id=queue_id, items=items, properties_suffix="")


PUT_KINDS = pytest.mark.parametrize("kind", ["single", "list", "wire-batch"])


def put(store: MessageStore, kind: str, queue_id: int) -> PutStatus:
    """A put of ``kind`` to ``queue_id`` (the list also to queue 0, whose file exists)."""
    if kind == "single":
        return store.put_message(message(queue_id=queue_id, body=b"one")).status
    if kind == "list":
        return store.put_messages([message(queue_id=0, body=b"a"), message(queue_id=queue_id, body=b"b")]).status
    measured = store.measure_batch(wire_batch(queue_id, 3))
    if measured is None:
        pytest.skip("the compiled append is not available (numba)")
    return store.put_batch(measured).status


@FLUSH_TYPES
@PUT_KINDS
def test_a_put_whose_consume_queue_file_cannot_be_made_is_refused_not_acknowledged(
    tiny_disk: Path, flush: FlushDiskType, kind: str
) -> None:
    """The CommitLog has room but the new queue's ConsumeQueue file does not fit: the put is refused
    with DISK_FULL, nothing of it is stored, and every acknowledged message stays readable. Before,
    it was acknowledged and its entry never written: no consumer could read it."""
    clock = FakeClock()
    config = queue_file_config(tiny_disk, flush_disk_type=flush)
    with MessageStore(config, clock=clock) as store:
        assert store.put_message(message(queue_id=0, body=b"first")).ok  # queue 0's file is made
        end = store.commit_log.max_offset
        fill(tiny_disk, leave=150_000)  # the CommitLog's current file has room; a 200 KB file does not fit
        assert put(store, kind, queue_id=1) is PutStatus.DISK_FULL
        assert store.commit_log.max_offset == end
        assert "disk full" in (store.space.refusal or "")
        (tiny_disk / "ballast").unlink()
        clock.now += 1.0  # the next refused put looks at the disk again
        assert put(store, kind, queue_id=1) is PutStatus.PUT_OK
        store.dispatch_now()
        for queue_id in (0, 1):
            high = store.get_max_offset_in_queue("TopicA", queue_id)
            with store.get_messages("TopicA", queue_id, 0, 100) as result:
                assert result.message_count == high > 0
    with MessageStore(config) as store:
        assert store.get_max_offset_in_queue("TopicA", 1) > 0


def test_refused_puts_look_at_the_disk_again_at_most_once_a_second(tiny_disk: Path) -> None:
    """While puts are refused, a put checks the disk again once the clock has moved a second: writes
    resume at once after space returns, not at the next retention round (which never runs here)."""
    clock = FakeClock()
    config = tiny_disk_config(tiny_disk, clean_resource_interval_ms=3_600_000)
    with MessageStore(config, clock=clock) as store:
        assert store.put_message(message(body=b"first")).ok
        ballast = fill(tiny_disk, leave=100_000)  # less than one more CommitLog file
        for _ in range(300):  # until the current file is full
            if not store.put_message(message(body=bytes(2000))).ok:
                break
        assert store.disk_full
        ballast.unlink()
        clock.now += 0.5
        refused = store.put_message(message(body=b"too soon"))  # the refusal is remembered, no statvfs
        assert refused.status is PutStatus.DISK_FULL and "disk full" in (refused.remark or "")
        clock.now += 0.5
        assert store.put_message(message(body=b"space again")).ok
        assert not store.disk_full


def test_keys_skipped_while_no_index_file_fits_are_indexed_once_space_returns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An index file that cannot be made does not hold up dispatch: the messages are consumable at
    once; their keys are indexed from the CommitLog once a file fits (queries find them), and the
    episode is one log line, without a traceback."""
    clock = FakeClock()
    with mounted_tmpfs(tmp_path / "disk", "4m") as disk:
        config = small_config(
            disk / "store",
            mapped_file_size_commit_log=256 * 1024,
            max_hash_slot_num=1000,
            max_index_num=150_000,  # a 3 MB index file
            disk_space_warning_level_ratio=1.0,
            disk_space_clean_forcibly_ratio=1.0,
        )
        fill(disk, leave=2 * 1024 * 1024)
        with MessageStore(config, clock=clock) as store:
            for i in range(50):
                assert store.put_message(message(body=f"k{i}".encode(), KEYS=f"key{i}")).ok
            store.dispatch_now()
            with store.get_messages("TopicA", 0, 0, 100) as result:
                assert result.message_count == 50
            assert store.query_message("TopicA", "key3") == []
            resize_tmpfs(disk, "16m")
            clock.now += 1.0
            assert store.put_message(message(body=b"after", KEYS="after")).ok
            store.dispatch_now()
            assert [record.body for record in store.query_message("TopicA", "key3")] == [b"k3"]
            assert [record.body for record in store.query_message("TopicA", "after")] == [b"after"]
    index_errors = [r for r in caplog.records if r.name == "rocketq.store.index_service" and r.levelname == "ERROR"]
    assert len(index_errors) == 1
    assert not [r for r in caplog.records if r.exc_info]
