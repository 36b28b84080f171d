"""Rate limits (maxOffsetsPerTrigger prorated by backlog, minOffsetsPerTrigger with maxTriggerDelay) and the
data-loss checks, with a fake clock."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.spark.offsets import QueueKey
from rocketq.spark.planning import Admission, DataLossError, backlog, prorate, reconcile, report_data_loss

A, B, C = QueueKey("t", "x", 0), QueueKey("t", "x", 1), QueueKey("t", "y", 0)


def test_prorating_by_backlog_rounds_up_below_one() -> None:
    assert prorate({A: 0, B: 0}, {A: 90, B: 10}, 10) == {A: 9, B: 1}
    # B's share (0.3) is rounded up so it is not starved; A's (2.7) down
    assert prorate({A: 0, B: 0}, {A: 90, B: 10}, 3) == {A: 2, B: 1}
    assert prorate({A: 5, B: 0}, {A: 7, B: 1}, 100) == {A: 7, B: 1}  # within budget: everything


@given(
    st.dictionaries(
        st.builds(QueueKey, st.just("t"), st.just("b"), st.integers(0, 30)),
        st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
    ),
    st.integers(1, 10**6),
)
def test_prorating_never_stalls_never_passes_the_end(spans: dict[QueueKey, tuple[int, int]], budget: int) -> None:
    start = {key: low for key, (low, _) in spans.items()}
    latest = {key: low + size for key, (low, size) in spans.items()}
    end = prorate(start, latest, budget)
    assert all(start[k] <= end[k] <= latest[k] for k in latest)
    moved = sum(end[k] - start[k] for k in latest)
    waiting = sum(backlog(start, latest).values())
    if waiting:
        assert moved >= 1  # never stalls
        assert moved <= max(budget, 0) + len(latest)  # the budget, plus the queues rounded up
    if waiting <= budget:
        assert end == latest


def test_max_rows_splits_a_backlog_into_batches() -> None:
    admission = Admission(max_rows=4, min_rows=None, max_delay_ms=0, last_batch_ms=0)
    start, latest, batches = {A: 0, B: 0}, {A: 6, B: 4}, 0
    while True:
        end = admission.next_end(start, latest, now_ms=batches)
        if end == start:
            break
        assert sum(end[k] - start[k] for k in end) <= 4 + 2
        start, batches = end, batches + 1
    assert start == latest and batches >= 3


def test_min_rows_waits_for_data_or_the_delay() -> None:
    admission = Admission(max_rows=None, min_rows=10, max_delay_ms=1000, last_batch_ms=0)
    start = {A: 0}
    assert admission.next_end(start, {A: 5}, now_ms=500) == start  # too few, too early
    assert admission.next_end(start, {A: 12}, now_ms=600) == {A: 12}  # enough
    assert admission.next_end({A: 12}, {A: 13}, now_ms=1200) == {A: 12}  # the delay runs from the last batch
    assert admission.next_end({A: 12}, {A: 13}, now_ms=1600) == {A: 13}  # ... and has passed
    assert admission.next_end({A: 13}, {A: 14}, now_ms=1601, wait_allowed=False) == {A: 14}  # AvailableNow


def test_no_data_no_batch_and_new_queues_join_at_zero() -> None:
    admission = Admission(max_rows=None, min_rows=None, max_delay_ms=0, last_batch_ms=0)
    assert admission.next_end({A: 3}, {A: 3}, now_ms=1) == {A: 3}
    assert admission.next_end({A: 3}, {A: 3, C: 0}, now_ms=1) == {A: 3, C: 0}  # tracked from now on
    assert admission.next_end({A: 3}, {A: 3, C: 2}, now_ms=1) == {A: 3, C: 2}


def test_reconcile_waits_for_away_brokers_and_reports_lost_queues() -> None:
    routed = {("t", "x"), ("t", "y")}
    # broker y did not answer: its queue keeps its place, nothing is reported
    waiting = reconcile({A: 1, C: 4}, {A: 5}, routed, answered={("t", "x")})
    assert waiting.latest == {A: 5, C: 4} and not waiting.problems and waiting.waiting_brokers == {("t", "y")}
    # broker x answered without queue 1: the queue was cut
    cut = reconcile({A: 1, B: 2}, {A: 5}, routed, answered={("t", "x")})
    assert cut.latest == {A: 5} and "no longer a readable queue" in cut.problems[0]
    # a queue that now ends before where the query is: lost messages; it goes on from its new end
    back = reconcile({A: 9}, {A: 4}, routed, answered={("t", "x")})
    assert "ends at 4, before offset 9" in back.problems[0]
    admission = Admission(max_rows=None, min_rows=None, max_delay_ms=0, last_batch_ms=0)
    assert admission.next_end({A: 9}, back.latest, now_ms=1) == {A: 4}


def test_report_data_loss_fails_or_warns() -> None:
    with pytest.raises(DataLossError, match="failOnDataLoss"):
        report_data_loss("gone", True)
    report_data_loss("gone", False)
