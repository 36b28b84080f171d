"""Offsets JSON (canonical text, round trips), resolving startingOffsets / endingOffsets, range planning."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.spark.offsets import QueueKey, QueueRange, offsets_json, parse_offsets, plan_ranges, resolve
from rocketq.spark.options import OffsetSpec, OptionError

keys = st.builds(
    QueueKey, st.sampled_from(["a", "b", "orders"]), st.sampled_from(["broker-a", "broker-b"]), st.integers(0, 20)
)
offset_maps = st.dictionaries(keys, st.integers(0, 2**62))


@given(offset_maps)
def test_offsets_round_trip_through_canonical_json(offsets: dict[QueueKey, int]) -> None:
    document = offsets_json(offsets)
    text = json.dumps(document)
    assert text == json.dumps(document, sort_keys=True)  # the order Spark's text comparison needs
    assert parse_offsets(json.loads(text)) == offsets


@given(offset_maps, st.randoms())
def test_the_same_offsets_give_the_same_text_in_any_order(offsets: dict[QueueKey, int], rnd: object) -> None:
    items = list(offsets.items())
    rnd.shuffle(items)  # type: ignore[attr-defined]
    assert json.dumps(offsets_json(dict(items))) == json.dumps(offsets_json(offsets))


def test_queue_ids_are_strings_in_the_document() -> None:
    document = offsets_json({QueueKey("t", "b", 10): 1, QueueKey("t", "b", 2): 3})
    assert json.dumps(document) == '{"t": {"b": {"10": 1, "2": 3}}}'


BOUNDS = {
    QueueKey("t", "broker-a", 0): (0, 10),
    QueueKey("t", "broker-a", 1): (5, 8),
    QueueKey("t", "broker-b", 0): (0, 0),
}


def stamp(key: QueueKey, ms: int) -> int:
    return {0: 3, 1: 6}[key.queue_id] if key.broker == "broker-a" else 0


def test_resolving_specs() -> None:
    a0, a1, b0 = BOUNDS
    assert resolve(OffsetSpec("earliest"), "startingOffsets", BOUNDS, stamp) == {a0: 0, a1: 5, b0: 0}
    assert resolve(OffsetSpec("latest"), "startingOffsets", BOUNDS, stamp) == {a0: 10, a1: 8, b0: 0}
    assert resolve(OffsetSpec("timestamp", timestamp_ms=1), "startingOffsets", BOUNDS, stamp) == {a0: 3, a1: 6, b0: 0}
    given_offsets = {"t": {"broker-a": {"0": 4, "1": -1}}}
    assert resolve(OffsetSpec("offsets", offsets=given_offsets), "startingOffsets", BOUNDS, stamp) == {
        a0: 4,
        a1: 8,
        b0: 0,  # not given: the start's default, earliest
    }
    ending = {"t": {"broker-a": {"1": 6}}}
    assert resolve(OffsetSpec("offsets", offsets=ending), "endingOffsets", BOUNDS, stamp) == {a0: 10, a1: 6, b0: 0}
    with pytest.raises(OptionError, match=r"startingOffsets.*t@broker-c:0"):
        resolve(OffsetSpec("offsets", offsets={"t": {"broker-c": {"0": 1}}}), "startingOffsets", BOUNDS, stamp)


def test_planning_drops_empty_ranges_and_starts_new_queues_at_zero() -> None:
    a, b, c = QueueKey("t", "x", 0), QueueKey("t", "x", 1), QueueKey("t", "y", 0)
    assert plan_ranges({a: 3, b: 7}, {a: 9, b: 7, c: 2}, None) == [
        QueueRange("t", "x", 0, 3, 9),
        QueueRange("t", "y", 0, 0, 2),
    ]


@given(st.dictionaries(keys, st.tuples(st.integers(0, 1000), st.integers(0, 5000))), st.integers(1, 40))
def test_min_partitions_splits_ranges_without_gaps_or_overlaps(
    spans: dict[QueueKey, tuple[int, int]], wanted: int
) -> None:
    start = {key: low for key, (low, _) in spans.items()}
    end = {key: low + size for key, (low, size) in spans.items()}
    pieces = plan_ranges(start, end, wanted)
    for key in spans:
        mine = sorted((p.start, p.end) for p in pieces if p.key == key)
        covered = [o for low, high in mine for o in (low, high)]
        if end[key] > start[key]:
            assert mine[0][0] == start[key] and mine[-1][1] == end[key]
            assert all(covered[i] == covered[i + 1] for i in range(1, len(covered) - 1, 2))  # contiguous
        else:
            assert not mine
    whole = [r for r in plan_ranges(start, end, None)]
    assert len(pieces) >= min(len(whole), wanted) or not whole
    assert all(p.size > 0 for p in pieces)


def test_min_partitions_splits_in_proportion() -> None:
    a, b = QueueKey("t", "x", 0), QueueKey("t", "x", 1)
    pieces = plan_ranges({a: 0, b: 0}, {a: 300, b: 100}, 4)
    assert [(p.queue_id, p.start, p.end) for p in pieces] == [(0, 0, 100), (0, 100, 200), (0, 200, 300), (1, 0, 100)]
