"""Cutting a CommitLog back (a former master rejoining as a slave): the log, its ConsumeQueues, index and
epoch entries end where they are cut, the cut survives a crash, and the master's bytes appended after
it make the store equal to the master's."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.store import MessageStore, StoreConfig
from rocketq.store.epochs import EpochEntry

from .conftest import message, small_config
from .test_recovery import assert_consistent


def put(store: MessageStore, prefix: str, count: int) -> None:
    for i in range(count):
        result = store.put_message(message(queue_id=i % 3, body=f"{prefix}-{i}".encode() * 6, KEYS=f"{prefix}{i}"))
        assert result.ok


def copy_log(source: MessageStore, target: MessageStore) -> None:
    """What a slave does: append the source's bytes from the target's end, file by file."""
    file_size = source.config.mapped_file_size_commit_log
    while True:
        at = target.commit_log.max_offset
        if at == 0 and source.commit_log.min_offset:
            at = source.commit_log.min_offset
        data = source.read_commit_log(at, file_size)
        if not data:
            return
        target.append_replica(at, data)


def log_bytes(store: MessageStore) -> bytes:
    out = bytearray()
    at = store.commit_log.min_offset
    while chunk := store.read_commit_log(at, 1 << 20):
        out += chunk
        at += len(chunk)
    return bytes(out)


def queue_table(store: MessageStore) -> dict[tuple[str, int], list[tuple[int, int, int]]]:
    store.dispatch_now()
    table = {}
    for queue in store.queues():
        entries = [queue.entry(offset) for offset in range(queue.min_offset, queue.max_offset)]
        table[(queue.topic, queue.queue_id)] = [entry for entry in entries if entry is not None]
    return {key: value for key, value in table.items() if value}


def keys_found(store: MessageStore, prefix: str, count: int) -> set[str]:
    return {f"{prefix}{i}" for i in range(count) if store.query_message("TopicA", f"{prefix}{i}")}


@pytest.fixture
def pair(tmp_path: Path) -> tuple[StoreConfig, StoreConfig]:
    return small_config(tmp_path / "new-master"), small_config(tmp_path / "old-master")


def test_diverged_tail_is_cut_and_the_masters_bytes_follow(pair: tuple[StoreConfig, StoreConfig]) -> None:
    with MessageStore(pair[0]) as master, MessageStore(pair[1]) as old:
        put(master, "shared", 40)  # several 4 KiB files
        copy_log(master, old)
        shared_end = master.commit_log.max_offset
        put(old, "lost", 25)  # the old master's writes no slave got
        put(master, "new", 30)  # the new master's, at the same offsets
        assert old.commit_log.max_offset > shared_end
        assert keys_found(old, "lost", 25)

        assert old.truncate_to(shared_end) == shared_end
        assert old.commit_log.max_offset == shared_end
        assert not keys_found(old, "lost", 25)
        assert log_bytes(old) == log_bytes(master)[:shared_end]
        assert assert_consistent(old) == 40

        copy_log(master, old)
        assert log_bytes(old) == log_bytes(master)
        assert queue_table(old) == queue_table(master)
        assert keys_found(old, "new", 30) == {f"new{i}" for i in range(30)}
        assert not keys_found(old, "lost", 25)
        assert old.start_writing() == master.commit_log.max_offset  # (it becomes master again)
        put(old, "after", 3)
        assert old.commit_log.max_offset > master.commit_log.max_offset

    with MessageStore(pair[1]) as reopened:  # the cut outlives a restart
        assert assert_consistent(reopened) == 40 + 30 + 3
        assert not keys_found(reopened, "lost", 25)


def test_a_cut_inside_a_record_ends_the_log_before_it(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path / "s")) as store:
        put(store, "m", 10)
        ends = sorted(entry[0] + entry[1] for entries in queue_table(store).values() for entry in entries)
        assert store.truncate_to(ends[4] + 7) == ends[4]
        assert assert_consistent(store) == 5


def test_a_cut_below_the_first_file_empties_the_log(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path / "s")) as store:
        put(store, "m", 30)
        assert store.truncate_to(0) == 0
        assert store.commit_log.max_offset == 0 and not queue_table(store)
        assert not keys_found(store, "m", 30)
        assert not store.commit_log.files.files
        assert store.append_replica(8192, b"") == 8192  # an empty log takes a master's bytes at a file start


def test_nothing_is_cut_at_or_past_the_end(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path / "s")) as store:
        put(store, "m", 5)
        end = store.commit_log.max_offset
        assert store.truncate_to(end + 100) == end
        assert not store.config.truncate_path.exists()
        assert assert_consistent(store) == 5


def test_a_crash_during_the_cut_is_finished_by_the_next_start(tmp_path: Path) -> None:
    config = small_config(tmp_path / "s")
    with MessageStore(config) as store:
        put(store, "m", 20)
        ends = sorted(entry[0] + entry[1] for entries in queue_table(store).values() for entry in entries)
        store.epochs.begin(1, 0)
        store.epochs.begin(2, ends[12])
    # a crash right after ``truncate`` was written: the store was not closed, the cut not made
    config.truncate_path.write_text(f"{ends[9]}\n")
    config.abort_path.touch()
    with MessageStore(config) as store:
        assert store.commit_log.max_offset == ends[9]
        assert assert_consistent(store) == 10
        assert not keys_found(store, "m1", 1) - {"m1"}  # m10.. are gone
        assert keys_found(store, "m", 20) == {f"m{i}" for i in range(10)}
        assert store.epochs.entries == [EpochEntry(1, 0)]
        assert not config.truncate_path.exists()
    with MessageStore(config) as store:  # done once: a later start finds nothing to cut
        assert store.commit_log.max_offset == ends[9]


def test_epoch_entries_past_the_cut_are_forgotten(tmp_path: Path) -> None:
    config = small_config(tmp_path / "s")
    with MessageStore(config) as store:
        store.epochs.begin(1, 0)
        put(store, "m", 10)
        middle = store.commit_log.max_offset
        store.epochs.begin(3, middle)
        put(store, "m", 10)
        store.truncate_to(middle)
        assert store.epochs.entries == [EpochEntry(1, 0), EpochEntry(3, middle)]
        store.truncate_to(middle - 1)
        assert store.epochs.entries == [EpochEntry(1, 0)]
    with MessageStore(config) as store:
        assert store.epochs.entries == [EpochEntry(1, 0)]
