"""How a pulled batch is cut into listener calls and into parts for the consume workers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.listener import listener_batches, worker_parts
from rocketq.client.message import MessageExt


def _messages(count: int, topic: str = "T") -> list[MessageExt]:
    return [MessageExt(topic, b"", 0, offset, 0, 0, 0, 0, b"", 0) for offset in range(count)]


@given(count=st.integers(0, 300), size=st.integers(0, 40))
def test_listener_calls_hold_every_message_once_in_order(count: int, size: int) -> None:
    messages = _messages(count)
    batches = listener_batches(messages, size)
    assert [m.queue_offset for batch in batches for m in batch] == list(range(count))
    assert all(1 <= len(batch) <= max(1, size) for batch in batches)
    assert all(len(batch) == max(1, size) for batch in batches[:-1])


@given(count=st.integers(1, 300), size=st.integers(1, 40), spare=st.integers(-2, 64))
def test_worker_parts_hold_whole_listener_calls_and_use_the_spare_workers(count: int, size: int, spare: int) -> None:
    messages = _messages(count)
    parts = worker_parts(messages, size, spare)
    assert [m for part in parts for m in part] == messages
    assert all(len(part) % size == 0 for part in parts[:-1])  # no listener call is split
    calls = -(-count // size)
    assert len(parts) <= max(1, min(spare, calls))
    if spare >= calls:  # enough idle workers: one listener call each
        assert len(parts) == calls


def test_a_retry_topic_batch_is_seen_under_its_original_topic() -> None:
    retried = _messages(3, "%RETRY%G")
    for message in retried:
        message._properties = {"RETRY_TOPIC": "Orders"}
    assert [m.topic for batch in listener_batches(retried, 2) for m in batch] == ["Orders"] * 3
