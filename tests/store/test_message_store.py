from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from rocketq.common.message import tags_hash_code
from rocketq.common.record import decode_record
from rocketq.store import FlushDiskType, GetStatus, MessageStore, MessageToStore, PutStatus, StoreError
from rocketq.testing import wait_until

from .conftest import message, small_config


def bodies(store: MessageStore, topic: str, queue_id: int, offset: int = 0, count: int = 1000) -> list[bytes]:
    out: list[bytes] = []
    with store.get_messages(topic, queue_id, offset, count) as result:
        data = result.tobytes()
    position = 0
    while position < len(data):
        record = decode_record(data, position)
        out.append(record.body)
        position += record.total_size
    return out


def test_put_and_get_across_file_rolls(store: MessageStore) -> None:
    for i in range(60):
        result = store.put_message(message(queue_id=i % 3, body=f"m{i}".encode() * 30))
        assert result.ok and result.queue_offsets == [i // 3]
    store.dispatch_now()
    assert len(store.commit_log.files.files) > 2
    for queue_id in range(3):
        assert store.get_max_offset_in_queue("TopicA", queue_id) == 20
        assert bodies(store, "TopicA", queue_id) == [f"m{i}".encode() * 30 for i in range(queue_id, 60, 3)]
    assert bodies(store, "TopicA", 1, offset=18) == [b"m55" * 30, b"m58" * 30]


def test_get_statuses(store: MessageStore) -> None:
    assert store.get_messages("Nope", 0, 0, 32).status is GetStatus.NO_MATCHED_LOGIC_QUEUE
    store.put_messages([message(body=b"a"), message(body=b"b")])
    store.dispatch_now()
    with store.get_messages("TopicA", 0, 2, 32) as at_end:
        assert (at_end.status, at_end.next_begin_offset) == (GetStatus.OFFSET_OVERFLOW_ONE, 2)
    with store.get_messages("TopicA", 0, 9, 32) as past:
        assert (past.status, past.next_begin_offset) == (GetStatus.OFFSET_OVERFLOW_BADLY, 2)
    with store.get_messages("TopicA", 0, 1, 32) as found:
        assert (found.status, found.message_count, found.next_begin_offset) == (GetStatus.FOUND, 1, 2)
        assert (found.min_offset, found.max_offset) == (0, 2)


def test_adjacent_records_come_back_as_one_view(store: MessageStore) -> None:
    store.put_messages([message(body=bytes([i]) * 20) for i in range(10)])
    store.dispatch_now()
    with store.get_messages("TopicA", 0, 0, 10) as result:
        assert result.message_count == 10
        assert len(result.buffers) == 1 and isinstance(result.buffers[0], memoryview)
        assert result.total_bytes == sum(len(b) for b in result.buffers)


def test_tag_filter_on_the_consume_queue(store: MessageStore) -> None:
    for i in range(12):
        store.put_message(message(body=str(i).encode(), TAGS="TagA" if i % 3 == 0 else "TagB"))
    store.dispatch_now()
    with store.get_messages("TopicA", 0, 0, 32, tags_codes={tags_hash_code("TagA")}) as result:
        assert result.queue_offsets == [0, 3, 6, 9]
        assert result.next_begin_offset == 12
    with store.get_messages("TopicA", 0, 0, 32, tags_codes={tags_hash_code("Other")}) as none:
        assert none.status is GetStatus.NO_MATCHED_MESSAGE and none.next_begin_offset == 12


def test_oversized_message_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path, max_message_size=1000)) as store:
        before = store.commit_log.max_offset
        big = store.put_message(message(body=bytes(2000)))
        assert big.status is PutStatus.MESSAGE_ILLEGAL and "2" in big.remark and "1000" in big.remark
        batch = store.put_messages([message(body=b"ok"), message(body=bytes(5000))])
        assert batch.status is PutStatus.MESSAGE_ILLEGAL
        assert store.commit_log.max_offset == before
        assert store.put_message(message(topic="x" * 128)).status is PutStatus.MESSAGE_ILLEGAL
        assert store.put_message(message(body=b"fine")).ok


def test_query_by_key_and_time_range(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path, max_index_num=10)) as store:
        for i in range(30):
            store.put_message(message(body=f"b{i}".encode(), KEYS=f"order-{i % 5} all", UNIQ_KEY=f"U{i:03d}"))
        store.dispatch_now()
        assert len(store.index.files) >= 3 if store.index else False
        assert sorted(r.body for r in store.query_message("TopicA", "order-2")) == sorted(
            f"b{i}".encode() for i in range(2, 30, 5)
        )
        assert [r.body for r in store.query_message("TopicA", "U017")] == [b"b17"]
        assert len(store.query_message("TopicA", "all", max_num=7)) == 7
        assert store.query_message("OtherTopic", "all") == []
        future = int(time.time() * 1000) + 3_600_000
        assert store.query_message("TopicA", "all", begin_ms=future, end_ms=future + 1000) == []


def test_offset_by_timestamp_and_store_times(store: MessageStore) -> None:
    store.put_message(message(body=b"early"))
    time.sleep(0.05)
    middle = int(time.time() * 1000)
    time.sleep(0.05)
    store.put_messages([message(body=b"late1"), message(body=b"late2")])
    store.dispatch_now()
    assert store.get_offset_by_timestamp("TopicA", 0, 0) == 0
    assert store.get_offset_by_timestamp("TopicA", 0, middle) == 1
    assert store.get_offset_by_timestamp("TopicA", 0, middle + 10**7) == 3
    earliest = store.get_earliest_message_time("TopicA", 0)
    assert earliest is not None and earliest < middle


def test_lookup_by_commit_log_offset(store: MessageStore) -> None:
    result = store.put_message(message(body=b"find me", TAGS="T1"))
    record = store.lookup_message(result.physical_offsets[0])
    assert record is not None and record.body == b"find me" and record.physical_offset == result.physical_offsets[0]
    assert store.lookup_message(10**9) is None


def test_reopen_keeps_messages_and_continues_queue_offsets(tmp_path: Path) -> None:
    config = small_config(tmp_path)
    with MessageStore(config) as store:
        for i in range(25):
            store.put_message(message(queue_id=i % 2, body=f"{i}".encode()))
    assert not config.abort_path.exists()
    with MessageStore(config) as store:
        assert store.recovery is not None and store.recovery.clean_shutdown and not store.recovery.damage
        assert store.put_message(message(queue_id=0, body=b"25")).queue_offsets == [13]
        store.dispatch_now()
        assert bodies(store, "TopicA", 0) == [f"{i}".encode() for i in range(0, 25, 2)] + [b"25"]


def test_a_store_directory_is_opened_once(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path)), pytest.raises(StoreError, match="locked by another process"):
        MessageStore(small_config(tmp_path)).start()


def test_sync_flush_group_commit(tmp_path: Path) -> None:
    config = small_config(tmp_path, mapped_file_size_commit_log=1 << 20, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    with MessageStore(config) as store:
        single = store.put_message_and_wait(message(body=b"one"))
        assert single.ok and store.flusher.request(single.end_offset).result(5) >= single.end_offset
        assert store.commit_log.files.flushed_where >= single.end_offset
        puts_per_thread, threads = 20, 16
        errors: list[object] = []

        def writer() -> None:
            for _ in range(puts_per_thread):
                result = store.put_message_and_wait(message(body=b"x" * 100))
                if not result.ok or store.commit_log.files.flushed_where < result.end_offset:
                    errors.append(result)

        flushes_before = store.flusher.flush_count
        workers = [threading.Thread(target=writer) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert errors == []
        fsyncs = store.flusher.flush_count - flushes_before
        assert fsyncs < puts_per_thread * threads  # shared fsyncs: group commit


def test_async_flush_writes_behind(tmp_path: Path) -> None:
    config = small_config(tmp_path, mapped_file_size_commit_log=1 << 20, flush_commit_log_least_pages=0)
    with MessageStore(config) as store:
        result = store.put_message(message(body=b"later"))
        wait_until(lambda: store.commit_log.files.flushed_where >= result.end_offset)


def test_arrival_listener_sees_new_queue_offsets(store: MessageStore) -> None:
    seen: list[tuple[str, int, int]] = []
    arrived = threading.Event()

    def listener(topic: str, queue_id: int, max_offset: int, store_timestamp: int, record: object) -> None:
        seen.append((topic, queue_id, max_offset))
        arrived.set()

    store.add_arrival_listener(listener)
    store.put_messages([message(queue_id=2), message(queue_id=2)])
    assert arrived.wait(15)  # (a bound on a hang: the dispatcher thread tells it)
    store.dispatch_now()
    assert seen[-1] == ("TopicA", 2, 2)


def test_retention_deletes_expired_files_and_logs_referenced_queues(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = small_config(tmp_path, file_reserved_time_hours=0.0)
    with MessageStore(config) as store:
        for i in range(40):
            store.put_message(message(body=bytes(300), UNIQ_KEY=f"K{i}"))
        store.dispatch_now()
        files_before = len(store.commit_log.files.files)
        time.sleep(0.01)
        deleted = store.retention.run(force=True)
        assert deleted == min(10, files_before - 1)
        assert "still point into it" in caplog.text
        minimum = store.commit_log.min_offset
        assert minimum > 0
        low = store.get_min_offset_in_queue("TopicA", 0)
        assert low > 0
        with store.get_messages("TopicA", 0, 0, 5) as too_small:
            assert too_small.status is GetStatus.OFFSET_TOO_SMALL and too_small.next_begin_offset == low
        with store.get_messages("TopicA", 0, low, 100) as rest:
            assert rest.message_count == 40 - low
            assert rest.physical_offsets[0] >= minimum


def test_retention_waits_for_the_configured_hour(tmp_path: Path) -> None:
    hour = int(time.strftime("%H"))
    config = small_config(tmp_path, file_reserved_time_hours=0.0, delete_when=f"{(hour + 12) % 24:02d}")
    with MessageStore(config) as store:
        for _ in range(20):
            store.put_message(message(body=bytes(500)))
        assert store.retention.run() == 0
        assert store.commit_log.min_offset == 0


def test_closing_a_store_deletes_nothing(tmp_path: Path) -> None:
    """Retention runs on its own schedule only: a store closed at an hour when every expired file may go
    keeps its files (the cleaner, unlike the flushers, does not run once more on the way out)."""
    every_hour = ";".join(f"{hour:02d}" for hour in range(24))
    config = small_config(
        tmp_path, file_reserved_time_hours=0.0, delete_when=every_hour, clean_resource_interval_ms=3_600_000
    )
    with MessageStore(config) as store:
        for _ in range(40):
            store.put_message(message(body=bytes(300)))
        files = sorted(path.name for path in config.commit_log_dir.iterdir())
    assert len(files) > 1
    assert sorted(path.name for path in config.commit_log_dir.iterdir()) == files


def test_delete_topic_removes_its_queues(store: MessageStore) -> None:
    store.put_messages([message(topic="Gone"), message(topic="Kept")])
    store.dispatch_now()
    store.delete_topic("Gone")
    assert store.get_messages("Gone", 0, 0, 1).status is GetStatus.NO_MATCHED_LOGIC_QUEUE
    assert not (store.config.consume_queue_dir / "Gone").exists()
    assert store.get_max_offset_in_queue("Kept", 0) == 1
    assert store.put_message(message(topic="Gone")).queue_offsets == [0]


def test_delete_topic_while_a_reader_holds_a_queue_file(store: MessageStore) -> None:
    store.put_messages([message(topic="Held")])
    store.dispatch_now()
    held = store.consume_queue("Held", 0).entries(0, 1)
    assert held is not None
    store.delete_topic("Held")  # the held file's folder cannot go yet: no error, the rest is removed
    assert store.get_messages("Held", 0, 0, 1).status is GetStatus.NO_MATCHED_LOGIC_QUEUE
    mapped, view = held
    path = mapped.path
    assert path.exists()
    view.release()
    mapped.release()
    assert not path.exists()  # deleted when its reader let it go


def test_closed_store_refuses_puts(tmp_path: Path) -> None:
    store = MessageStore(small_config(tmp_path)).start()
    store.close()
    assert store.put_message(message()).status is PutStatus.SERVICE_NOT_AVAILABLE


def test_empty_batch_is_illegal(store: MessageStore) -> None:
    assert store.put_messages([]).status is PutStatus.MESSAGE_ILLEGAL


def test_stats(store: MessageStore) -> None:
    store.put_messages([message(), message(queue_id=1)])
    store.dispatch_now()
    stats = store.stats()
    assert stats.put_messages == 2 and stats.consume_queues == 2
    assert stats.dispatched_offset == stats.commit_log_max_offset > 0
    assert 0 <= stats.disk_used_ratio <= 1


def test_batch_put_returns_one_entry_per_message(store: MessageStore) -> None:
    result = store.put_messages([MessageToStore(topic="B", queue_id=0, body=bytes(700)) for _ in range(12)])
    assert result.ok and result.queue_offsets == list(range(12)) and len(result.physical_offsets) == 12
    store.dispatch_now()
    assert store.get_max_offset_in_queue("B", 0) == 12


def test_dispatch_pending_dispatches_deferred_puts_on_the_caller(tmp_path: Path) -> None:
    """Puts with dispatch=False wait for dispatch_pending (or the dispatcher's own interval)."""
    config = small_config(tmp_path, dispatch_interval_ms=60_000)  # the thread's backstop is far away
    with MessageStore(config) as store:
        store.put_message(message(queue_id=0))  # start the queue, dispatched inline
        assert store.get_max_offset_in_queue("TopicA", 0) == 1
        for _ in range(3):
            assert store.put_messages([message(queue_id=0)], dispatch=False).ok
        assert store.get_max_offset_in_queue("TopicA", 0) == 1  # not dispatched yet
        store.dispatch_pending(max_bytes=1 << 20)
        assert store.get_max_offset_in_queue("TopicA", 0) == 4  # on this thread, before returning
        assert store.put_messages([message(queue_id=0, body=bytes(2000))], dispatch=False).ok
        store.dispatch_pending(max_bytes=100)  # too much for the caller: the dispatcher thread is woken
        wait_until(lambda: store.get_max_offset_in_queue("TopicA", 0) >= 5)
        assert store.get_max_offset_in_queue("TopicA", 0) == 5


def test_close_ends_the_background_threads_even_twice_and_a_second_start_is_refused(tmp_path: Path) -> None:
    names = {"rocketq-dispatch", "rocketq-commitlog-flush", "rocketq-logics-flush", "rocketq-clean"}
    before = set(threading.enumerate())  # (another test's stores, such as a session-scoped cluster's, run on)
    store = MessageStore(small_config(tmp_path)).start()
    with pytest.raises(RuntimeError, match="open already"):  # a second set of threads would outlive close
        store.start()
    assert store.put_message(message()).ok
    store.close()
    store.close()
    assert names.isdisjoint(thread.name for thread in threading.enumerate() if thread not in before)
    assert not store.config.abort_path.exists()
