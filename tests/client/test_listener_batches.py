"""How a pulled batch is cut into listener calls and into parts for the consume workers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.listener import HANDOVER_S, CallTimes, listener_batches, worker_parts
from rocketq.client.message import MessageExt, decode_messages
from rocketq.common.message import encode_properties
from rocketq.common.record import StoredRecord, encode_record


def _messages(count: int, topic: str = "T") -> list[MessageExt]:
    return [MessageExt(topic, b"", 0, offset, 0, 0, 0, 0, b"", 0) for offset in range(count)]


@given(count=st.integers(0, 300), size=st.integers(0, 40))
def test_listener_calls_hold_every_message_once_in_order(count: int, size: int) -> None:
    messages = _messages(count)
    batches = listener_batches(messages, size)
    assert [m.queue_offset for batch in batches for m in batch] == list(range(count))
    assert all(1 <= len(batch) <= max(1, size) for batch in batches)
    assert all(len(batch) == max(1, size) for batch in batches[:-1])


@given(count=st.integers(1, 300), size=st.integers(1, 40), spare=st.integers(-2, 64), calls_per_part=st.integers(0, 50))
def test_worker_parts_hold_whole_listener_calls_and_use_the_spare_workers(
    count: int, size: int, spare: int, calls_per_part: int
) -> None:
    messages = _messages(count)
    parts = worker_parts(messages, size, spare, calls_per_part)
    assert [m for part in parts for m in part] == messages
    assert all(len(part) % size == 0 for part in parts[:-1])  # no listener call is split
    calls = -(-count // size)
    assert len(parts) <= max(1, min(spare, calls, calls // max(1, calls_per_part)))
    if spare >= calls and calls_per_part <= 1:  # enough idle workers and slow calls: one listener call each
        assert len(parts) == calls
    if len(parts) > 1:  # every part but the last is worth its hand-over
        assert all(len(part) >= size * max(1, calls_per_part) for part in parts[:-1])


def test_fast_calls_are_grouped_and_slow_ones_spread() -> None:
    times = CallTimes()
    assert times.calls_per_part() == 1  # nothing measured: spread as widely as allowed
    times.record(32 * 2e-6, 32)  # 2 us a call
    assert times.calls_per_part() == int(HANDOVER_S / 2e-6)
    assert len(worker_parts(_messages(32), 1, 20, times.calls_per_part())) == 1
    for _ in range(30):  # the listener slows down (it now waits on I/O): the average follows
        times.record(0.05, 1)
    assert times.calls_per_part() == 1
    assert len(worker_parts(_messages(32), 1, 20, times.calls_per_part())) == 16  # two calls each, on 16 of the 20
    times.record(1.0, 0)  # a run that made no call (its queue was dropped) changes nothing
    assert times.calls_per_part() == 1


def test_a_retry_topic_batch_is_seen_under_its_original_topic() -> None:
    records = [
        StoredRecord(
            total_size=0, magic_code=0, body_crc=0, queue_id=0, flag=0, queue_offset=offset, physical_offset=0,
            sys_flag=0, born_timestamp=0, born_host=bytes(8), store_timestamp=0, store_host=bytes(8),
            reconsume_times=1, prepared_transaction_offset=0, body=b"", topic="%RETRY%G",
            properties=encode_properties({"RETRY_TOPIC": "Orders"}),
        )
        for offset in range(3)
    ]  # fmt: skip
    retried = decode_messages(b"".join(encode_record(record) for record in records))
    assert [m.topic for batch in listener_batches(retried, 2) for m in batch] == ["Orders"] * 3
