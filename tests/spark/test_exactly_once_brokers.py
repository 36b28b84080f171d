"""The exactly-once sink's commit over two brokers, one of them away at commit time, driven as Spark
drives it (tasks' writes, the driver's commit, abort after a failed commit, the micro-batch run again)
but without a Spark session: the broker is stopped exactly between the writes and the commit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from rocketq.spark.options import SinkOptions
from rocketq.spark.sink_commit import Prepared, stream_transaction
from rocketq.spark.sink_send import SinkCommitError, abort_prepared, close_senders, commit_prepared, prepare_partition
from rocketq.testing import ThreadedCluster

from .helpers import new_topic, pending_half_messages, visible

ROWS = 300  # per partition: several chunks of sendBatchSize, spread over both brokers
TRANSACTION = stream_transaction("5e0c2b1a-query", 7)


@pytest.fixture
def two_brokers(tmp_path: Path) -> Iterator[ThreadedCluster]:
    with ThreadedCluster(tmp_path / "cluster", brokers=2) as cluster:
        try:
            yield cluster
        finally:
            close_senders()


def run_tasks(options: SinkOptions) -> list[Prepared]:
    """The micro-batch's two tasks, as Spark runs them (again: the same rows in the same order)."""
    reports = []
    for partition in range(2):
        bodies = [f"{partition}/{n}".encode() for n in range(ROWS)]
        batches = [pa.record_batch({"body": bodies[i : i + 100]}) for i in range(0, ROWS, 100)]
        prefix = f"5e0c2b1a-query-7-{partition}-"
        options_and_rows = (options, {"body": "body"}, batches)
        reports.append(
            prepare_partition(
                *options_and_rows, transaction=TRANSACTION, partition=partition, attempt=0, key_prefix=prefix
            )
        )
    return reports


def test_a_commit_cut_short_by_a_broker_away_is_completed_by_the_batch_run_again(two_brokers: ThreadedCluster) -> None:
    cluster = two_brokers
    topic = new_topic(cluster, queues=2)
    options = SinkOptions.parse(
        {"nameServer": cluster.namesrv_addr, "topic": topic, "deliveryGuarantee": "exactlyOnce", "sendBatchSize": "32"}
    )
    everything = sorted(f"{p}/{n}".encode() for p in range(2) for n in range(ROWS))
    first = run_tasks(options)
    on_a = sum(report.held.get("broker-a", 0) for report in first)
    assert all(set(report.held) == {"broker-a", "broker-b"} for report in first)  # each task wrote to both

    cluster.call(cluster.cluster.brokers[1].aclose())  # broker-b goes away before the driver commits
    with pytest.raises(SinkCommitError) as failed:
        commit_prepared(options, first)
    assert failed.value.committed == ["broker-a"] and list(failed.value.failed) == ["broker-b"]
    abort_prepared(options, first)  # Spark aborts after a failed commit: broker-a keeps what it committed
    assert len(visible(cluster, topic)) == on_a  # readers see broker-a's part of the micro-batch meanwhile

    cluster.call(cluster.cluster.start_broker(1))  # back (at another port), its half messages kept
    again = run_tasks(options)  # the query restarts: Spark runs the micro-batch again, same id
    assert [report.held for report in again] == [report.held for report in first]  # rows go where they went
    answers = commit_prepared(options, again)
    assert answers["broker-a"].already_committed and answers["broker-a"].rolled_back > 0  # the replay dropped
    assert not answers["broker-b"].already_committed and answers["broker-b"].committed == 2 * ROWS - on_a
    assert sorted(m.body for m in visible(cluster, topic)) == everything  # every row once
    assert pending_half_messages(cluster.namesrv_addr, options.producer_group) == 0  # first run's b parts too

    repeated = commit_prepared(options, again)  # Spark may call commit again for the same batch
    assert all(answer.already_committed and answer.committed == 0 for answer in repeated.values())
    assert len(visible(cluster, topic)) == 2 * ROWS
