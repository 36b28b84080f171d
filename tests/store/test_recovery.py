"""Damage on disk: each case recovers to a consistent store and reports what it found."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.common.record import decode_record
from rocketq.store import FlushDiskType, MessageStore, StoreConfig

from .conftest import message, small_config


def fill(config: StoreConfig, count: int, *, queues: int = 2) -> list[tuple[int, int]]:
    """Write ``count`` messages, close cleanly; return (offset, size) per message."""
    with MessageStore(config) as store:
        placed = []
        for i in range(count):
            result = store.put_message(message(queue_id=i % queues, body=f"body-{i}".encode() * 8, KEYS=f"key{i}"))
            placed.append((result.physical_offsets[0], result.sizes[0]))
    return placed


def crash_marker(config: StoreConfig) -> None:
    """Make the next start take the after-a-crash path."""
    config.abort_path.touch()


def assert_consistent(store: MessageStore) -> int:
    """Every ConsumeQueue entry points at an intact record of its topic/queue/offset; returns count."""
    store.dispatch_now()
    total = 0
    for queue in store.queues():
        for offset in range(queue.min_offset, queue.max_offset):
            entry = queue.entry(offset)
            assert entry is not None
            record = store.lookup_message(entry[0])
            assert record is not None, (queue.topic, queue.queue_id, offset)
            assert (record.topic, record.queue_id, record.queue_offset) == (queue.topic, queue.queue_id, offset)
            assert record.total_size == entry[1]
            total += 1
    assert store.stats().dispatched_offset == store.commit_log.max_offset
    return total


def last_file(config: StoreConfig) -> Path:
    return sorted(config.commit_log_dir.iterdir())[-1]


def test_truncated_mid_record(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    placed = fill(config, 40)
    victim_offset, victim_size = placed[-1]
    path = last_file(config)
    position = victim_offset - int(path.name)
    data = bytearray(path.read_bytes())
    data[position + victim_size // 2 :] = bytes(len(data) - position - victim_size // 2)
    path.write_bytes(bytes(data))
    crash_marker(config)
    with MessageStore(config) as store:
        assert store.recovery is not None and store.recovery.damage
        assert str(victim_offset) in store.recovery.damage[0] and path.name in store.recovery.damage[0]
        assert store.commit_log.max_offset == victim_offset
        assert assert_consistent(store) == 39
        assert store.put_message(message(queue_id=1, body=b"next")).queue_offsets == [19]


@pytest.mark.parametrize("filler", [b"\xde\xad\xbe\xef", b"\x00"])
def test_tail_overwritten(tmp_path: Path, filler: bytes) -> None:
    config = small_config(tmp_path)
    placed = fill(config, 40)
    start = placed[-3][0]
    path = last_file(config)
    with path.open("r+b") as handle:
        handle.seek(start - int(path.name) + 10)  # inside the third-last record's header
        handle.write(filler * 300)
    crash_marker(config)
    with MessageStore(config) as store:
        assert store.recovery is not None and store.recovery.damage
        assert store.commit_log.max_offset == start
        assert assert_consistent(store) == 37
        assert store.query_message("TopicA", "key38") == []
        assert len(store.query_message("TopicA", "key36")) == 1


def test_garbage_after_the_last_record_is_cut(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    placed = fill(config, 10)
    end = placed[-1][0] + placed[-1][1]
    path = last_file(config)
    with path.open("r+b") as handle:
        handle.seek(end - int(path.name))
        handle.write(b"\x17garbage" * 10)
    crash_marker(config)
    with MessageStore(config) as store:
        assert store.commit_log.max_offset == end
        assert assert_consistent(store) == 10
        written = store.put_message(message(body=b"after garbage"))
        assert written.physical_offsets == [end]
    with MessageStore(config) as store:
        record = store.lookup_message(end)
        assert record is not None and record.body == b"after garbage"


def test_deleted_consume_queue_folder_is_rebuilt(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    fill(config, 50, queues=3)
    shutil.rmtree(config.consume_queue_dir / "TopicA")
    with MessageStore(config) as store:
        assert store.recovery is not None and "TopicA-0" in store.recovery.rebuilt
        assert assert_consistent(store) == 50
        assert [store.get_max_offset_in_queue("TopicA", q) for q in range(3)] == [17, 17, 16]
        assert store.put_message(message(queue_id=2)).queue_offsets == [16]


def test_consume_queue_behind_is_caught_up(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    fill(config, 30, queues=1)
    queue_file = sorted((config.consume_queue_dir / "TopicA" / "0").iterdir())[-1]
    data = bytearray(queue_file.read_bytes())
    keep = 2 * 20
    data[keep:] = bytes(len(data) - keep)
    queue_file.write_bytes(bytes(data))
    with MessageStore(config) as store:
        assert assert_consistent(store) == 30
        assert store.get_max_offset_in_queue("TopicA", 0) == 30


def test_deleted_index_is_rebuilt(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    fill(config, 30)
    shutil.rmtree(config.index_dir)
    with MessageStore(config) as store:
        found = store.query_message("TopicA", "key7")
        assert [r.body for r in found] == [b"body-7" * 8]
        assert len(store.query_message("TopicA", "key29")) == 1


def test_crash_without_damage_recovers_everything(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    fill(config, 30)
    crash_marker(config)
    with MessageStore(config) as store:
        assert store.recovery is not None and not store.recovery.clean_shutdown and not store.recovery.damage
        assert store.recovery.records_checked > 0
        assert assert_consistent(store) == 30


def test_wrong_file_size_is_a_clear_error(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    fill(config, 3)
    with pytest.raises(Exception, match="not the configured file size"):
        MessageStore(small_config(tmp_path, mapped_file_size_commit_log=8192)).start()


# -- property test ----------------------------------------------------------------------------------

operation = st.one_of(
    st.tuples(st.just("put"), st.integers(0, 2), st.integers(0, 900), st.integers(1, 4)),
    st.tuples(st.just("read"), st.integers(0, 2), st.integers(0, 60), st.integers(1, 40)),
    st.tuples(st.just("reopen"), st.booleans(), st.just(0), st.just(0)),
)


@pytest.mark.parametrize("flush", list(FlushDiskType), ids=lambda flush: flush.value)  # mapped / staged writes
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(operation, min_size=1, max_size=25))
def test_random_appends_reads_and_reopens_stay_consistent(
    tmp_path_factory: pytest.TempPathFactory, flush: FlushDiskType, ops: list[tuple[str, object, int, int]]
) -> None:
    config = small_config(tmp_path_factory.mktemp("prop"), flush_disk_type=flush)
    model: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    store = MessageStore(config).start()
    try:
        for index, (kind, first, second, third) in enumerate(ops):
            if kind == "put":
                assert isinstance(first, int)
                batch = [f"{index}.{n}:".encode() + bytes(second) for n in range(third)]
                result = store.put_messages([message(queue_id=first, body=body) for body in batch])
                assert result.ok
                assert result.queue_offsets == list(range(len(model[first]), len(model[first]) + third))
                model[first].extend(batch)
            elif kind == "read":
                assert isinstance(first, int)
                store.dispatch_now()
                with store.get_messages("TopicA", first, second, third) as got:
                    data = got.tobytes()
                    offsets = list(got.queue_offsets)
                position, seen = 0, []
                while position < len(data):
                    record = decode_record(data, position)
                    seen.append(record.body)
                    position += record.total_size
                assert seen == model[first][second : second + third]
                assert offsets == list(range(second, second + len(seen)))
            else:
                store.close()
                if first:
                    config.abort_path.touch()  # reopen through the crash path
                store = MessageStore(config).start()
        for queue_id, expected in model.items():
            store.dispatch_now()
            assert store.get_max_offset_in_queue("TopicA", queue_id) == len(expected)
    finally:
        store.close()


def test_a_crash_recovery_says_what_it_does_and_how_long_it_took(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = small_config(tmp_path)
    fill(config, 50)
    with caplog.at_level(logging.WARNING), MessageStore(config):
        pass  # a clean start: nothing said
    assert caplog.records == []
    crash_marker(config)
    with caplog.at_level(logging.WARNING), MessageStore(config):
        pass
    first, last = (record.getMessage() for record in caplog.records)
    assert "was not shut down cleanly: recovering" in first and "at most about" in first
    assert last.startswith(f"store {tmp_path}") and "recovered in" in last and "50 records checked" in last
