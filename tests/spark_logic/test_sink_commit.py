"""The exactly-once sink's bookkeeping without Spark or brokers: transaction and part ids, the driver's
commit plan from the tasks' reports, and where chunks of rows go."""

from __future__ import annotations

import pickle
from collections import Counter

import pytest

from rocketq.client.message import MessageQueue
from rocketq.spark.sink import Sent
from rocketq.spark.sink_commit import (
    CommitMessageError,
    Prepared,
    QueueChooser,
    batch_of,
    chunk_key,
    commit_plan,
    job_transaction,
    part_id,
    stream_transaction,
)

T = stream_transaction("q1", 7)


def report(partition: int, attempt: int, held: dict[str, int], transaction: str = T) -> Prepared:
    return Prepared(transaction, partition, attempt, part_id(partition, attempt, "ab12"), sum(held.values()), held)


def test_transaction_ids() -> None:
    assert T == "q1:7" and batch_of(T) == 7 and batch_of(stream_transaction("a:b", "12")) == 12
    assert batch_of(job_transaction("f00d")) is None
    with pytest.raises(ValueError, match="query and batch ids"):
        stream_transaction("", 3)
    with pytest.raises(ValueError, match=r"streaming\.sql\.batchId"):
        stream_transaction("q1", "")
    assert part_id(3, 1, "ab12") == "3-1-ab12"


def test_the_plan_lists_each_brokers_parts() -> None:
    plan = commit_plan([report(0, 0, {"a": 5, "b": 3}), None, report(2, 1, {"b": 4, "c": 0})])
    assert plan.transaction == T and plan.rows == 12 and plan.superseded == ()
    assert plan.parts == {"a": {"0-0-ab12": 5}, "b": {"0-0-ab12": 3, "2-1-ab12": 4}}  # no empty count for c
    assert plan.brokers == ["a", "b"]


def test_a_partition_reported_twice_is_committed_once() -> None:
    plan = commit_plan([report(1, 2, {"a": 4}), report(1, 0, {"a": 4}), report(0, 0, {"a": 1})])
    assert plan.parts == {"a": {"0-0-ab12": 1, "1-0-ab12": 4}} and plan.rows == 5
    assert plan.superseded == ("1-2-ab12",)  # not listed: the broker rolls it back


def test_nothing_reported() -> None:
    assert commit_plan([None, None]).transaction is None
    assert commit_plan([], "job-1").transaction == "job-1" and commit_plan([], "job-1").parts == {}
    assert commit_plan([report(0, 0, {})]).parts == {}  # an empty partition


@pytest.mark.parametrize(
    ("messages", "transaction", "problem"),
    [
        ([report(0, 0, {"a": 1}), report(1, 0, {"a": 1}, "q1:8")], None, "different transactions"),
        ([report(0, 0, {"a": 1})], "job-9", "different transactions"),
        ([Sent(0, 3)], None, "another deliveryGuarantee"),
    ],
)
def test_reports_that_do_not_belong_together_are_refused(messages: list, transaction: str | None, problem: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(CommitMessageError, match=problem):
        commit_plan(messages, transaction)


def test_a_report_survives_pickling() -> None:  # it travels from the task to the driver's commit
    sent = report(4, 1, {"broker-a": 10})
    assert pickle.loads(pickle.dumps(sent)) == sent


QUEUES = [MessageQueue("t", broker, q) for broker in ("a", "b", "c") for q in range(4)]
KEYS = [chunk_key(p, seq, c) for p in range(4) for seq in range(0, 1000, 100) for c in range(5)]


def test_chunks_are_placed_the_same_in_every_process_and_spread() -> None:
    chooser = QueueChooser(QUEUES)
    placed = [chooser.choose(key) for key in KEYS]
    assert placed == [QueueChooser(list(reversed(QUEUES))).choose(key) for key in KEYS]  # order of queues: none
    brokers = Counter(queue.broker_name for queue in placed)
    assert set(brokers) == {"a", "b", "c"} and min(brokers.values()) > len(KEYS) / 6
    assert len(set(placed)) == 12  # every queue used
    # fixed values: a change of the hash would move rows between brokers when a batch is run again
    assert [str(chooser.choose(chunk_key(0, 0, c))) for c in range(6)] == PINNED


PINNED = ["t@a:1", "t@a:2", "t@a:1", "t@a:3", "t@b:2", "t@a:1"]


def test_a_broker_leaving_moves_only_its_chunks_and_new_queues_move_none_across_brokers() -> None:
    before = QueueChooser(QUEUES)
    without_b = QueueChooser([q for q in QUEUES if q.broker_name != "b"])
    more_queues = QueueChooser([*QUEUES, *(MessageQueue("t", "a", q) for q in range(4, 8))])
    for key in KEYS:
        was = before.choose(key).broker_name
        if was != "b":
            assert without_b.choose(key).broker_name == was
        assert more_queues.choose(key).broker_name == was


def test_no_queue() -> None:
    with pytest.raises(ValueError, match="no queue"):
        QueueChooser([])
