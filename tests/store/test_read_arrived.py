"""A queue's last record read from the place its arrival notice gives (``StoreReads.get_arrived``) is
what ``get_messages`` reads at that offset: the same bytes and the same queue bounds, for any mix of
queues, sizes and tags over CommitLog files that roll; in any other state it declines and the general
read decides."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.common.message import tags_hash_code
from rocketq.store import GetStatus, MessageStore
from rocketq.store.results import DispatchRequest

from .conftest import message, small_config

TAGS = ["TagA", "TagB"]
PUTS = st.lists(
    st.tuples(st.integers(0, 2), st.integers(1, 900), st.sampled_from(TAGS)),
    min_size=1,
    max_size=24,
)


@settings(max_examples=40, deadline=None)
@given(PUTS)
def test_the_last_record_read_from_its_place_is_the_general_read(puts: list[tuple[int, int, str]]) -> None:
    with tempfile.TemporaryDirectory() as root, MessageStore(small_config(Path(root))) as store:
        places = []
        for queue_id, size, tag in puts:
            result = store.put_message(message(queue_id=queue_id, body=bytes([queue_id]) * size, TAGS=tag))
            assert result.ok
            places.append((queue_id, result.queue_offsets[0], result.physical_offsets[0], result.sizes[0], tag))
        store.dispatch_now()
        last = {queue_id: queue_offset for queue_id, queue_offset, *_ in places}
        for queue_id, queue_offset, physical, size, tag in places:
            arrived = store.get_arrived("TopicA", queue_id, queue_offset, physical, size)
            if queue_offset != last[queue_id]:  # entries after it: only the general read may answer
                assert arrived is None
                continue
            assert arrived is not None
            view, low, high = arrived
            for tags_codes in (None, frozenset({tags_hash_code(tag)})):
                with store.get_messages("TopicA", queue_id, queue_offset, 32, tags_codes=tags_codes) as general:
                    assert general.status == GetStatus.FOUND
                    assert (low, high) == (general.min_offset, general.max_offset)
                    assert general.next_begin_offset == queue_offset + 1 == high
                    assert general.queue_offsets == [queue_offset]
                    assert general.physical_offsets == [physical]
                    assert bytes(view) == general.tobytes()


def test_an_unknown_queue_or_a_queue_with_ext_units_is_read_in_general(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path / "ext", enable_consume_queue_ext=True)) as store:
        put = store.put_message(message(TAGS="TagA"))
        store.dispatch_now()
        place = (put.queue_offsets[0], put.physical_offsets[0], put.sizes[0])
        assert store.get_arrived("TopicA", 0, *place) is None  # (its entries may hold ext addresses)
        assert store.get_arrived("TopicB", 0, *place) is None
        with store.get_messages("TopicA", 0, 0, 32) as general:
            assert general.message_count == 1


def test_a_lone_puts_arrival_notice_carries_its_record(tmp_path: Path) -> None:
    """The listener of a lone put's dispatch gets the record's place, the one its ConsumeQueue entry
    holds; a batch's notice carries none."""
    seen: list[tuple[str, int, int, DispatchRequest | None]] = []
    config = small_config(tmp_path / "store", dispatch_interval_ms=3_600_000)
    with MessageStore(config) as store:
        store.add_arrival_listener(
            lambda topic, queue_id, end, _stamp, record: seen.append((topic, queue_id, end, record))
        )
        put = store.put_message(message(queue_id=1, TAGS="TagB"))
        store.dispatch_now()
        (topic, queue_id, end, record) = seen[-1]
        assert (topic, queue_id, end) == ("TopicA", 1, 1) and record is not None
        assert (record.queue_offset, record.commit_log_offset, record.size) == (
            put.queue_offsets[0],
            put.physical_offsets[0],
            put.sizes[0],
        )
        assert record.tags_code == tags_hash_code("TagB")
        assert store.get_commit_log_offset_in_queue("TopicA", 1, 0) == record.commit_log_offset
        store.put_messages([message(queue_id=2), message(queue_id=2)])
        store.dispatch_now()
        assert seen[-1][:3] == ("TopicA", 2, 2) and seen[-1][3] is None
