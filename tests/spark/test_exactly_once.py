"""The exactly-once sink through Spark: every row visible once after a stream, a micro-batch Spark runs
again after the brokers committed it dropped whole, a killed task attempt's half messages never
visible, a failed micro-batch (and a failed batch write) leaving nothing visible."""

from __future__ import annotations

import contextlib
import glob
import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from rocketq.client import MessageQueue
from rocketq.testing import ThreadedCluster

from .helpers import body, fill, new_topic, pending_half_messages, visible

WAIT_S = 60.0
pytestmark = pytest.mark.filterwarnings("ignore:Cannot infer the eval type")  # the UDFs' type hints: plain UDFs


def copy(
    spark: SparkSession,
    cluster: ThreadedCluster,
    source: str,
    target: str,
    checkpoint: Path,
    group: str,
    transform: Callable[[Column], Column] = lambda column: column,
    per_trigger: int = 40,
) -> StreamingQuery:
    """Run a stream from ``source`` to ``target`` (exactly once) until it read what is there, or failed."""
    frame = (
        spark.readStream.format("rocketmq")
        .options(nameServer=cluster.namesrv_addr, topic=source, startingOffsets="earliest")
        .option("maxOffsetsPerTrigger", str(per_trigger))
        .load()
    )
    query = (
        frame.select(transform(F.col("body")).alias("body"), "keys")
        .writeStream.format("rocketmq")
        .options(nameServer=cluster.namesrv_addr, topic=target, deliveryGuarantee="exactlyOnce", producerGroup=group)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    with contextlib.suppress(StreamingQueryException):  # a failed query: see query.exception()
        query.awaitTermination(120)
    return query


def pending_counter(namesrv_addr: str, producer_group: str) -> Callable[[], int]:
    """``pending_half_messages`` for a UDF: a closure, which Spark's workers unpickle without importing
    these tests (they import rocketq only)."""

    def pending() -> int:
        from rocketq.client import SyncAdminClient

        with SyncAdminClient(namesrv_addr) as admin:
            answers = admin.pending_transactions().values()
        return sum(g.half_messages for answer in answers for g in answer.groups if g.producer_group == producer_group)

    return pending


def two_queues(cluster: ThreadedCluster, count: int) -> tuple[str, list[bytes]]:
    """A source topic with one queue on each broker, ``count`` messages in each; their bodies."""
    source = new_topic(cluster, queues=1)
    queues = [MessageQueue(source, broker, 0) for broker in ("broker-a", "broker-b")]
    for queue in queues:
        fill(cluster, queue, count)
    return source, sorted(body(queue, n) for queue in queues for n in range(count))


def drop_last_commit(checkpoint: Path) -> None:
    """What a crash after the sink's commit, before Spark's commit log, leaves: the last batch unrecorded."""
    commits = sorted(glob.glob(str(checkpoint / "commits" / "[0-9]*")), key=lambda p: int(os.path.basename(p)))
    os.remove(commits[-1])
    crc = checkpoint / "commits" / f".{os.path.basename(commits[-1])}.crc"
    if crc.exists():
        crc.unlink()


def test_every_row_once_and_a_batch_run_again_is_dropped(
    spark: SparkSession, cluster: ThreadedCluster, tmp_path: Path
) -> None:
    source, expected = two_queues(cluster, 50)
    target = new_topic(cluster, queues=2)
    group = f"eo-{target}"
    checkpoint = tmp_path / "checkpoint"
    first = copy(spark, cluster, source, target, checkpoint, group)
    assert first.exception() is None
    assert len(first.recentProgress) >= 3  # several micro-batches (40 rows each at most)
    written = visible(cluster, target)
    assert sorted(m.body for m in written) == expected
    assert len({m.msg_id for m in written}) == 100
    assert {m.queue_id for m in written} == {0, 1} and pending_half_messages(cluster.namesrv_addr, group) == 0

    drop_last_commit(checkpoint)
    again = copy(spark, cluster, source, target, checkpoint, group)
    assert again.exception() is None
    assert sum(progress["numInputRows"] for progress in again.recentProgress) > 0  # the last batch ran again
    assert sorted(m.body for m in visible(cluster, target)) == expected  # ... and its rows were dropped
    assert pending_half_messages(cluster.namesrv_addr, group) == 0


def test_a_killed_task_attempt_leaves_nothing_visible(
    spark: SparkSession, cluster: ThreadedCluster, tmp_path: Path
) -> None:
    """One task (one source queue) whose first attempt sends part of its rows as half messages, then
    fails on its last row; Spark runs it again."""
    count = 300
    source = new_topic(cluster, queues=1)  # broker-b's queue stays empty: no task for it
    fill(cluster, MessageQueue(source, "broker-a", 0), count, size=1024)  # a Python UDF's answers go out per
    target = new_topic(cluster, queues=2)  # 64 KiB: 1 KiB bodies let the rows before the last reach the sink
    group = f"eo-{target}"
    namesrv, seen = cluster.namesrv_addr, tmp_path / "pending-when-killed"
    pending_now = pending_counter(namesrv, group)

    def fail_first_attempt(value: bytes) -> bytes:
        from pyspark import TaskContext

        if TaskContext.get().attemptNumber() == 0 and value.rstrip(b".").endswith(f"/{count - 1}".encode()):
            deadline = time.monotonic() + WAIT_S
            while (pending := pending_now()) == 0 and time.monotonic() < deadline:
                time.sleep(0.05)  # until rows before this one are sent
            seen.write_text(str(pending))
            raise RuntimeError("this task attempt is killed")
        return value

    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "50")  # the sink gets rows 50 at a time
    try:
        udf = F.udf(fail_first_attempt, "binary")
        query = copy(spark, cluster, source, target, tmp_path / "c", group, udf, per_trigger=count)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert query.exception() is None and len(query.recentProgress) == 1
    assert 0 < int(seen.read_text()) < count  # the killed attempt had sent some of its rows
    written = visible(cluster, target)
    queue = MessageQueue(source, "broker-a", 0)
    assert sorted(m.body for m in written) == sorted(body(queue, n).ljust(1024, b".") for n in range(count))
    assert pending_half_messages(namesrv, group) == 0  # its half messages rolled back by the commit


def test_a_failed_micro_batch_leaves_nothing_visible_until_it_runs_again(
    spark: SparkSession, cluster: ThreadedCluster, tmp_path: Path
) -> None:
    count = 20
    source, expected = two_queues(cluster, count)
    target = new_topic(cluster, queues=2)
    group = f"eo-{target}"
    namesrv, poison = cluster.namesrv_addr, tmp_path / "poison"
    pending_now = pending_counter(namesrv, group)
    poison.touch()

    def fail_partition_1(value: bytes) -> bytes:
        from pyspark import TaskContext

        if TaskContext.get().partitionId() == 1 and os.path.exists(poison):
            deadline = time.monotonic() + WAIT_S
            while pending_now() < count and time.monotonic() < deadline:
                time.sleep(0.05)  # until partition 0 sent its rows: the abort has them to roll back
            raise RuntimeError("this micro-batch fails")
        return value

    checkpoint = tmp_path / "c"
    failed = copy(spark, cluster, source, target, checkpoint, group, F.udf(fail_partition_1, "binary"))
    assert isinstance(failed.exception(), StreamingQueryException)
    assert "this micro-batch fails" in str(failed.exception())
    assert visible(cluster, target) == []  # partition 0's rows were sent, none visible
    # (the abort rolled them back if partition 0's task had reported before the job failed; otherwise
    # the abort does not know the transaction, and the next run's commit rolls them back)

    poison.unlink()
    rerun = copy(spark, cluster, source, target, checkpoint, group, F.udf(fail_partition_1, "binary"))
    assert rerun.exception() is None
    assert sorted(m.body for m in visible(cluster, target)) == expected
    assert pending_half_messages(namesrv, group) == 0


def test_a_batch_write_is_one_transaction(spark: SparkSession, cluster: ThreadedCluster) -> None:
    target = new_topic(cluster, queues=2)
    group = f"eo-{target}"

    def write(frame: DataFrame) -> None:
        frame.write.format("rocketmq").options(
            nameServer=cluster.namesrv_addr, topic=target, deliveryGuarantee="exactlyOnce", producerGroup=group
        ).mode("append").save()

    pending_now = pending_counter(cluster.namesrv_addr, group)

    def fail_on_last(value: str) -> str:
        if value == "299":  # the last row of the last of 3 tasks, once the other two sent their rows
            deadline = time.monotonic() + WAIT_S
            while pending_now() < 200 and time.monotonic() < deadline:
                time.sleep(0.05)
            raise RuntimeError("this write fails")
        return value

    rows = spark.range(0, 300, 1, 3).selectExpr("cast(id as string) as body")
    with pytest.raises(Exception, match="this write fails"):
        write(rows.select(F.udf(fail_on_last, "string")("body").alias("body")))
    assert visible(cluster, target) == []
    assert pending_half_messages(cluster.namesrv_addr, group) == 0  # the abort rolled back

    write(rows)
    written = visible(cluster, target)
    assert sorted(int(m.body) for m in written) == list(range(300))
    assert Counter(m.msg_id.rsplit("-", 2)[0] for m in written).most_common(1)[0][1] == 300  # one job id
