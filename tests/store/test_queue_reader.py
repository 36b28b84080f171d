"""get_messages against a model of the ConsumeQueue: filters, counts, byte budgets, file rolls, views."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.common.message import tags_hash_code
from rocketq.common.record import decode_record
from rocketq.store import GetStatus, MessageStore

from .conftest import message, small_config

TAGS = ["a", "b", "c"]


@settings(max_examples=40, deadline=None)
@given(
    puts=st.lists(st.tuples(st.integers(0, 1), st.sampled_from(TAGS), st.integers(1, 300)), min_size=1, max_size=120),
    start=st.integers(0, 40),
    max_count=st.integers(1, 80),  # both sides of SCALAR_MAX_ENTRIES (32)
    max_bytes=st.integers(1, 12000),
    wanted=st.none() | st.sets(st.sampled_from(TAGS), max_size=2),
)
def test_get_messages_matches_the_model(
    puts: list[tuple[int, str, int]], start: int, max_count: int, max_bytes: int, wanted: set[str] | None
) -> None:
    with tempfile.TemporaryDirectory() as directory:
        # small CommitLog files (records of one read span several), ConsumeQueue files large enough
        # that the reader's chunks are cut by max_count only
        config = small_config(
            Path(directory), mapped_file_size_commit_log=2048, mapped_file_size_consume_queue=20 * 100
        )
        with MessageStore(config) as store:
            model: dict[int, list[tuple[int, int, str, bytes]]] = {0: [], 1: []}
            for n, (queue_id, tag, length) in enumerate(puts):
                body = bytes([n % 256]) * length
                result = store.put_message(message(queue_id=queue_id, body=body, TAGS=tag))
                assert result.ok
                model[queue_id].append((result.physical_offsets[0], result.sizes[0], tag, body))
            store.dispatch_now()
            entries = model[0]
            codes = None if wanted is None else {tags_hash_code(tag) for tag in wanted}
            taken, total, cursor = [], 0, start
            while cursor < len(entries) and len(taken) < max_count and total < max_bytes:
                chunk_end = min(len(entries), cursor + max_count - len(taken))
                stopped = False
                while cursor < chunk_end:
                    _, size, tag, _ = entries[cursor]
                    if wanted is not None and tag not in wanted:
                        cursor += 1
                        continue
                    if taken and total + size > max_bytes:
                        stopped = True
                        break
                    taken.append(cursor)
                    total += size
                    cursor += 1
                if stopped:
                    break
            with store.get_messages("TopicA", 0, start, max_count, tags_codes=codes, max_bytes=max_bytes) as got:
                if start >= len(entries):
                    assert got.status is not GetStatus.FOUND
                    return
                assert got.queue_offsets == taken
                assert got.physical_offsets == [entries[i][0] for i in taken]
                assert got.total_bytes == total and got.message_count == len(taken)
                assert got.next_begin_offset == cursor
                assert got.status is (GetStatus.FOUND if taken else GetStatus.NO_MATCHED_MESSAGE)
                data = got.tobytes()
                assert len(got.buffers) <= max(1, len(taken))
            position, bodies = 0, []
            while position < len(data):
                record = decode_record(data, position)
                bodies.append(record.body)
                position += record.total_size
            assert bodies == [entries[i][3] for i in taken]
