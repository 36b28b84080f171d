"""ProcessQueue against a model: the offset safe to commit is the smallest one not yet consumed."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.client.message import MessageExt, MessageQueue, decode_messages
from rocketq.client.process_queue import ProcessQueue
from rocketq.common.record import StoredRecord, encode_record


def pulled(offsets: list[int]) -> list[MessageExt]:
    records = b"".join(
        encode_record(
            StoredRecord(
                0,
                0,
                0,
                1,
                0,
                offset,
                1000 + offset,
                0,
                0,
                bytes(8),
                0,
                bytes(8),
                0,
                0,
                b"b" * (offset % 5 + 1),
                "T",
                "",
            )
        )
        for offset in offsets
    )
    return decode_messages(records)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_commit_offset_and_cache_follow_the_model(data: st.DataObject) -> None:
    queue = ProcessQueue(MessageQueue("T", "b", 1), next_pull_offset=0)
    pending: dict[int, MessageExt] = {}
    next_offset = 0
    highest = -1
    for _ in range(data.draw(st.integers(1, 12))):
        if data.draw(st.booleans()):  # a pull: increasing offsets, sometimes with gaps (filtered out)
            offsets = []
            for _ in range(data.draw(st.integers(1, 6))):
                next_offset += data.draw(st.sampled_from([1, 1, 1, 2]))
                offsets.append(next_offset)
            batch = pulled(offsets)
            queue.add(batch)
            pending.update({m.queue_offset: m for m in batch})
            highest = max(highest, offsets[-1])
        elif pending:  # consumption of some cached messages, in offset order or not, maybe the head batch
            chosen = data.draw(st.lists(st.sampled_from(sorted(pending)), unique=True, max_size=len(pending)))
            if data.draw(st.booleans()):
                chosen = sorted(pending)[: len(chosen)]  # the head of the queue, whole
            done = [pending.pop(offset) for offset in chosen]
            result = queue.finish(done)
            assert result == (min(pending) if pending else highest + 1)
        assert queue.count == len(pending)
        assert queue.cached_bytes == sum(len(m.body) for m in pending.values())
        assert queue.max_span == (max(pending) - min(pending) if pending else 0)
    if pending:
        assert queue.first_pending() is pending[min(pending)]


def test_a_long_run_of_batches_keeps_the_commit_offset_and_the_cache_right() -> None:
    """Thousands of offsets through a queue that is never empty, each batch finished whole at its head:
    the commit offset and the cache stay right, and the consumed prefix of its bookkeeping is dropped."""
    queue = ProcessQueue(MessageQueue("T", "b", 1), next_pull_offset=0)
    batches = [pulled(list(range(start, start + 32))) for start in range(0, 8192, 32)]
    queue.add(batches[0])
    for previous, batch in itertools.pairwise(batches):
        queue.add(batch)
        assert queue.count == 64 and queue.max_span == 63
        assert queue.finish(previous) == batch[0].queue_offset
        assert queue.first_pending() is batch[0]
        assert queue.cached_bytes == sum(len(m.body) for m in batch)
    assert queue.retained < 4096  # not 8192: the consumed prefix was dropped on the way
    assert queue.finish(batches[-1]) == 8192 and queue.count == 0
