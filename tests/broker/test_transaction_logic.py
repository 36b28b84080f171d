"""The transaction module's pure parts: offset ranges and op bodies, half-message properties (the cut
of a commit against decoding), the ledger's decisions."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker.transactions.batches import (
    batch_messages,
    batch_size,
    commit_suffix,
    committed_batch,
    half_batch_properties,
    skip_items,
)
from rocketq.broker.transactions.committed import CommittedGroups
from rocketq.broker.transactions.half import (
    HalfInfo,
    committed_properties,
    half_info,
    make_half,
    transaction_of_batch,
)
from rocketq.broker.transactions.ledger import HalfRun, Ledger, Settings
from rocketq.broker.transactions.ranges import OffsetRanges, as_ranges, decode_op_body, encode_op_body
from rocketq.common.message import HALF_TOPIC, decode_properties, encode_properties
from rocketq.common.record import StoredRecord
from rocketq.protocol import BatchItem, decode_batch, encode_batch

SETTINGS = Settings(timeout_ms=6_000, check_max=15, group_timeout_ms=900_000)


@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 20)), max_size=40))
def test_offset_ranges_hold_exactly_the_offsets_added(spans: list[tuple[int, int]]) -> None:
    ranges, expected = OffsetRanges(), set()
    for start, length in spans:
        ranges.add(start, start + length)
        expected.update(range(start, start + length))
    assert {offset for offset in range(0, 230) if offset in ranges} == expected
    listed = list(ranges)
    assert listed == as_ranges(expected)  # merged: disjoint, sorted, never adjacent
    for start, end in listed:
        assert ranges.covers(start, end) and not ranges.covers(start, end + 1)
        assert ranges.overlaps(end - 1, end + 5) and not ranges.overlaps(end, end + 1)
    ranges.drop_below(100)
    assert {offset for offset in range(0, 230) if offset in ranges} == {o for o in expected if o >= 100}


def test_op_bodies_list_offsets_and_runs() -> None:
    assert encode_op_body([(5, 6), (7, 10)]) == b"5,7-9"
    assert decode_op_body(b"5,7-9") == [(5, 6), (7, 10)]
    assert decode_op_body(b"12") == [(12, 13)]  # RocketMQ 4.x: one offset
    assert decode_op_body(b"3,x,4-,6-7") == [(3, 4), (6, 8)]  # what is not an offset is skipped


@pytest.mark.parametrize(
    "user",
    [
        {"TAGS": "a", "KEYS": "k1 k2", "UNIQ_KEY": "u"},
        {},
        {"REAL_TOPIC": "fake", "TRAN_MSG": "false", "x": "y"},  # the user's copies are removed, not kept
        {"DELAY": "3", "PGROUP": "other"},
    ],
)
def test_a_commit_cuts_the_same_properties_decoding_removes(user: dict[str, str]) -> None:
    single = dict(user, PGROUP="PG", MSG_REGION="DefaultRegion", TRACE_ON="true", CLUSTER="C")
    assert make_half(single, "Topic", 3) == (HALF_TOPIC, 0)
    texts = [encode_properties(single)]
    header = transaction_of_batch(encode_properties({"TRAN_MSG": "true", "PGROUP": "PG", "TRAN_GROUP_ID": "g"}))
    assert header is not None
    texts.append(half_batch_properties("MSG_REGION\x01DefaultRegion\x02CLUSTER\x01C", header, "Topic", 3, 5))
    for text in texts:
        cut = committed_properties(text)
        decoded = decode_properties(text)
        decoded.pop("TRAN_MSG")
        topic, queue = decoded.pop("REAL_TOPIC"), decoded.pop("REAL_QID")
        assert cut is not None and (cut[1], cut[2]) == (topic, int(queue)) == ("Topic", 3)
        assert decode_properties(cut[0]) == decoded
        assert "DELAY" not in decoded  # a transactional message is never delayed
    assert committed_properties(encode_properties({"TAGS": "a"})) is None  # no real topic: not a half message


def test_half_info_reads_the_transaction_properties() -> None:
    text = encode_properties(
        {"PGROUP": "PG", "TRAN_GROUP_ID": "q:1", "TRAN_GROUP_PART": "3-0", "CHECK_IMMUNITY_TIME_IN_SECONDS": "30"}
    )
    assert half_info(text) == HalfInfo("PG", "q:1", "3-0", 30)
    assert half_info("PGROUP\x01PG\x02CHECK_IMMUNITY_TIME_IN_SECONDS\x01soon") == HalfInfo("PG", None, None, None)


def run(first: int, count: int = 1, *, stored: int = 0, group: str | None = None, part: str | None = None) -> HalfRun:
    return HalfRun(first, count, count, first * 100, stored, HalfInfo("PG", group, part, None))


def ledger() -> Ledger:
    return Ledger(CommittedGroups(max_entries=3, retention_ms=10_000))


def test_settling_moves_the_low_water_mark_over_settled_offsets_only() -> None:
    book = ledger()
    runs = [book.add(run(offset)) for offset in range(5)]
    assert all(runs)
    book.settle([(1, 3)], [r for r in runs[1:3] if r])
    assert book.done_below == 0 and book.is_settled(2) and not book.is_settled(0)
    book.settle([(0, 1)], [runs[0]] if runs[0] else [])
    assert book.done_below == 3 and sorted(book.runs) == [3, 4]
    assert book.add(run(1)) is None  # settled: a restart's scan does not bring it back


def test_check_plan_checks_then_discards_after_the_last_check() -> None:
    book = ledger()
    young, old = book.add(run(0, stored=10_000)), book.add(run(1, stored=0))
    assert young and old
    plan = book.check_plan(now_ms=12_000, settings=SETTINGS)
    assert plan.check == [old] and not plan.discard
    old.checks = 15
    plan = book.check_plan(now_ms=17_000, settings=SETTINGS)
    assert plan.discard == [old] and plan.check == [young]


def test_a_group_plan_verifies_counts_and_rolls_back_other_parts() -> None:
    book = ledger()
    for first, count, part in [(0, 3, "p0-0"), (3, 2, "p1-0"), (5, 2, "p1-1"), (7, 1, "p0-0"), (8, 1, "p0-0")]:
        book.add(run(first, count, group="q:1", part=part))
    assert sorted(book.runs) == [0, 3, 5, 7]  # 8 continues 7's run of the same part: one run
    short = book.group_plan(("PG", "q:1"), {"p0-0": 5, "p1-1": 3})
    assert short.missing == {"p1-1": (3, 2)} and not short.commit
    plan = book.group_plan(("PG", "q:1"), {"p0-0": 5, "p1-1": 2})
    assert sorted(r.first for r in plan.commit) == [0, 5, 7] and [r.first for r in plan.rollback] == [3]
    book.committed.add(("PG", "q:1"), 0)
    replay = book.group_plan(("PG", "q:1"), {"p0-0": 5, "p1-1": 2})
    assert replay.already_committed and not replay.commit and len(replay.rollback) == 4


def test_orphaned_groups_wait_for_their_newest_message() -> None:
    book = ledger()
    book.add(run(0, 2, stored=0, group="q:2", part="a"))
    book.add(run(2, 1, stored=800_000, group="q:2", part="b"))
    assert book.check_plan(now_ms=1_000_000, settings=SETTINGS).orphans == []
    assert book.check_plan(now_ms=1_700_001, settings=SETTINGS).orphans == [("PG", "q:2")]


def test_the_committed_table_is_bounded_by_count_and_age() -> None:
    table = CommittedGroups(max_entries=3, retention_ms=10_000)
    for index in range(5):
        table.add(("PG", f"id{index}"), index * 1000)
    assert ("PG", "id1") not in table and ("PG", "id2") in table and len(table) == 3
    assert table.expire(now_ms=13_500) == 2 and list(table.to_json()) == [["PG", "id4", 4000]]


def test_a_snapshot_restores_what_the_ops_did_not_bring_back() -> None:
    book = ledger()
    rng = random.Random(7)
    for offset in range(20):
        book.add(run(offset))
    settled = rng.sample(range(20), 12)
    for offset in settled:
        book.settle([(offset, offset + 1)], [book.runs[offset]], op_end=offset + 1)
    book.runs[min(set(range(20)) - set(settled))].checks = 4
    book.committed.add(("PG", "x"), 5)
    copy = ledger()
    checks = copy.restore(book.snapshot())
    assert copy.done_below == book.done_below and list(copy.settled) == list(book.settled)
    assert all(copy.is_settled(offset) == (offset in settled) for offset in range(20))
    assert checks == {min(set(range(20)) - set(settled)): 4} and ("PG", "x") in copy.committed


def test_a_transactional_batch_commits_as_a_wire_batch_or_message_by_message() -> None:
    items = [BatchItem(b"a", "TAGS\x01x"), BatchItem(b"b", "MSG_REGION\x01Mine\x02DELAY\x013", 3), BatchItem(b"c")]
    wire = encode_batch(items)
    assert decode_batch(skip_items(wire, 2)) == [items[2]] and skip_items(wire, 0) == wire
    transaction = {"TRAN_MSG": "true", "PGROUP": "PG", "TRAN_GROUP_ID": "q:1", "TRAN_GROUP_PART": "0-0"}
    broker = "MSG_REGION\x01DefaultRegion\x02TRACE_ON\x01true\x02CLUSTER\x01C"
    properties = half_batch_properties(broker, transaction, "Topic", 2, len(items))
    assert batch_size(properties) == 3 and batch_size("TAGS\x01x") == 1
    half = StoredRecord(0, 0, 0, 0, 0, 7, 4096, 0, 1, bytes(8), 2, bytes(8), 0, 0, wire, HALF_TOPIC, properties)
    batch = committed_batch(half, skip=1)
    assert batch is not None and (batch.topic, batch.queue_id, batch.sys_flag) == ("Topic", 2, 8)
    assert batch.prepared_transaction_offset == 4096 and batch.items == skip_items(wire, 1)
    assert batch.properties_suffix == commit_suffix(broker, transaction)  # without the half message's own tail
    messages = batch_messages(batch)
    assert [m.body for m in messages] == [b"b", b"c"] and [m.flag for m in messages] == [3, 0]
    first = decode_properties(messages[0].properties)
    assert first["MSG_REGION"] == "Mine" and "DELAY" not in first  # a send's region kept, never delayed
    assert (first["CLUSTER"], first["TRAN_GROUP_PART"], first["PGROUP"]) == ("C", "0-0", "PG")
    assert {m.prepared_transaction_offset for m in messages} == {4096}
