"""The filter bit maps end to end in one store: the broker's calculator at dispatch (both dispatch
paths), the units beside the ConsumeQueue, and pulls that skip by them. The bloom filter may let a
non-match through (the selector then refuses it), but never drops a match."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.broker.consumer_filters import ConsumerFilterManager, SqlSubscription
from rocketq.broker.filter_bit_maps import FilterBitMaps
from rocketq.common.message import encode_properties
from rocketq.filter import compile_selector
from rocketq.filter.bloom import BloomFilter
from rocketq.store import MessageStore, MessageToStore, StoreConfig
from rocketq.store.consume_queue_ext import is_ext_addr
from rocketq.store.message_filter import BitMapFilter, MessageFilter

TOPIC = "Filtered"
EXPRESSIONS = st.sampled_from(
    [
        "a > 3",
        "a BETWEEN 2 AND 5",
        "b = 'x' OR a IS NULL",
        "TAGS IN ('t1', 't2') AND a <> 4",
        "NOT (b = 'y')",
        "a > 2.5 AND b IS NOT NULL",
        "c = 'z'",
        "a = b",
    ]
)
PROPERTIES = st.fixed_dictionaries(
    {},
    optional={
        "a": st.sampled_from(["1", "3", "4", "6", "x", "2.5"]),
        "b": st.sampled_from(["x", "y", "4"]),
        "TAGS": st.sampled_from(["t1", "t2", "t3"]),
    },
)


def open_store(root: Path, *, compiled: bool) -> MessageStore:
    config = StoreConfig(
        store_path_root_dir=root,
        mapped_file_size_commit_log=1 << 20,
        mapped_file_size_consume_queue=20 * 1000,
        mapped_file_size_consume_queue_ext=4096,
        enable_consume_queue_ext=True,
        compiled_dispatch=compiled,
        dispatch_columnar_min_bytes=1,
        dispatch_inline_max_records=0,
    )
    return MessageStore(config).start()


def pull_all(store: MessageStore, message_filter: MessageFilter) -> list[int]:
    offsets, offset = [], 0
    while offset < store.get_max_offset_in_queue(TOPIC, 0):
        with store.get_messages(TOPIC, 0, offset, 32, message_filter=message_filter) as result:
            offsets.extend(int(o) for o in result.queue_offsets)
            offset = int(result.next_begin_offset)
    return offsets


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(EXPRESSIONS, min_size=1, max_size=4),
    st.lists(PROPERTIES, min_size=1, max_size=60),
    st.booleans(),
)
def test_the_bloom_filter_never_drops_a_match(
    expressions: list[str], messages: list[dict[str, str]], compiled: bool
) -> None:
    bloom = BloomFilter(20, 2)  # tiny: many groups share bits, so false positives are common
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        manager = ConsumerFilterManager(root / "consumerFilter.json", bloom)
        for number, expression in enumerate(expressions):
            manager.register(f"G{number}", [SqlSubscription(TOPIC, expression, "SQL92", 1)])
        manager.persist()  # published to the dispatcher
        store = open_store(root / "store", compiled=compiled)
        try:
            store.set_bit_map_calculator(FilterBitMaps(manager))
            store.put_messages(
                [MessageToStore(topic=TOPIC, queue_id=0, body=b"m", properties=encode_properties(p)) for p in messages]
            )
            store.dispatch_now()
            queue = store.find_consume_queue(TOPIC, 0)
            assert queue is not None
            assert all(is_ext_addr(queue.entry(i)[2]) for i in range(len(messages)))  # type: ignore[index]
            for number, expression in enumerate(expressions):
                data = manager.get(TOPIC, f"G{number}")
                assert data is not None and data.born_offset == 0
                selector = compile_selector(expression)
                evaluated: list[int] = []

                def counting(properties: dict[str, str], matches=selector.matches, seen=evaluated) -> bool:  # type: ignore[no-untyped-def]
                    seen.append(1)
                    return matches(properties)

                bit_map = BitMapFilter(data.bloom.byte_masks(), bloom.bit_map_bytes, data.born_offset)
                with_bloom = pull_all(store, MessageFilter(properties_match=counting, bit_map=bit_map))
                exact = [i for i, p in enumerate(messages) if selector.matches(p)]
                assert with_bloom == exact, expression
                assert len(evaluated) <= len(messages)
                # every match was a bloom hit, so the matches were evaluated at least
                assert len(evaluated) >= len(exact)
        finally:
            store.close()


def test_the_bloom_filter_skips_what_cannot_match_without_reading_it(tmp_path: Path) -> None:
    bloom = BloomFilter()
    manager = ConsumerFilterManager(tmp_path / "consumerFilter.json", bloom)
    manager.register("G", [SqlSubscription(TOPIC, "a = '1'", "SQL92", 1)])
    manager.persist()
    store = open_store(tmp_path / "store", compiled=True)
    try:
        store.set_bit_map_calculator(FilterBitMaps(manager))
        messages = [{"a": str(i % 10)} for i in range(200)]
        store.put_messages(
            [MessageToStore(topic=TOPIC, queue_id=0, body=b"m", properties=encode_properties(p)) for p in messages]
        )
        store.dispatch_now()
        data = manager.get(TOPIC, "G")
        assert data is not None
        evaluated: list[int] = []
        selector = compile_selector("a = '1'")

        def counting(properties: dict[str, str]) -> bool:
            evaluated.append(1)
            return selector.matches(properties)

        bit_map = BitMapFilter(data.bloom.byte_masks(), bloom.bit_map_bytes, data.born_offset)
        assert pull_all(store, MessageFilter(properties_match=counting, bit_map=bit_map)) == list(range(1, 200, 10))
        assert len(evaluated) == 20  # one subscription: its bits are set exactly on its matches
        evaluated.clear()
        assert pull_all(store, MessageFilter(properties_match=counting)) == list(range(1, 200, 10))
        assert len(evaluated) == 200  # without the bit map every message is read and evaluated
        tagged = pull_all(store, MessageFilter(tags_codes=frozenset({0})))  # tag codes still resolve
        assert len(tagged) == 200
    finally:
        store.close()
