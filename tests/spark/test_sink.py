"""The rocketmq sink, at least once: every row acknowledged, deterministic unique keys, the columns it takes,
queues named by the rows, and refusals (other columns, a refused send). Exactly once:
``test_exactly_once``."""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from rocketq.client import MessageQueue, SyncAdminClient
from rocketq.client.route import PERM_READ
from rocketq.testing import ThreadedCluster

from .helpers import fill, new_topic


def read_back(spark: SparkSession, cluster: ThreadedCluster, topic: str) -> list:  # type: ignore[type-arg]
    frame = spark.read.format("rocketmq").options(
        nameServer=cluster.namesrv_addr, topic=topic, includeProperties="true"
    )
    return frame.load().collect()


def test_batch_write_sends_every_row_with_its_columns(spark: SparkSession, cluster: ThreadedCluster) -> None:
    topic = new_topic(cluster)
    frame = spark.range(0, 500, 1, 3).selectExpr(
        "cast(id as string) as body",
        "case when id % 2 = 0 then 'even' else 'odd' end as tags",
        "concat('k', id) as keys",
        "map('n', cast(id as string)) as properties",
    )
    frame.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", topic).mode(
        "append"
    ).save()
    got = read_back(spark, cluster, topic)
    assert sorted(int(bytes(r.body)) for r in got) == list(range(500))
    for row in got:
        n = int(bytes(row.body))
        assert row.tags == ("even" if n % 2 == 0 else "odd") and row.keys == f"k{n}" and row.properties["n"] == str(n)
    ids = {row.msgId for row in got}
    assert len(ids) == 500 and all(re.fullmatch(r"[0-9a-f]{32}-[0-2]-\d+", i) for i in ids)
    assert len({i.split("-")[0] for i in ids}) == 1  # one job id


def test_rows_name_their_queue(spark: SparkSession, cluster: ThreadedCluster) -> None:
    topic = new_topic(cluster, queues=2)
    frame = spark.createDataFrame(
        [(b"x", 1, "broker-b"), (b"y", 0, "broker-a"), (b"z", 1, "broker-b")],
        "body binary, queueId int, brokerName string",
    )
    frame.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", topic).mode(
        "append"
    ).save()
    got = sorted((r.brokerName, r.queueId, bytes(r.body)) for r in read_back(spark, cluster, topic))
    assert got == [("broker-a", 0, b"y"), ("broker-b", 1, b"x"), ("broker-b", 1, b"z")]
    lone = spark.createDataFrame([(b"x", 0)], "body binary, queueId int")
    with pytest.raises(Exception, match="add a brokerName column"):
        lone.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", topic).mode(
            "append"
        ).save()


@pytest.mark.parametrize(
    ("ddl", "named"),
    [
        ("body binary, value string", "'value'"),
        ("body int", "'body' must be binary or string"),
        ("tags string", "needs a body column"),
        ("body binary, queueId string", "'queueId' must be int"),
    ],
)
def test_columns_it_does_not_take_are_refused(
    spark: SparkSession, cluster: ThreadedCluster, ddl: str, named: str
) -> None:
    frame = spark.createDataFrame([], ddl)
    with pytest.raises(Exception, match=named):
        frame.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", "any").mode(
            "append"
        ).save()


def test_a_refused_send_fails_the_write(spark: SparkSession, cluster: ThreadedCluster) -> None:
    topic = new_topic(cluster, queues=1)
    with SyncAdminClient(cluster.namesrv_addr) as admin:  # readable, not writable
        admin.update_topic(topic, cluster="DefaultCluster", read_queues=1, write_queues=1, perm=PERM_READ)
    frame = spark.createDataFrame([(b"x",)], "body binary")
    with pytest.raises(Exception, match="could not send"):
        frame.write.format("rocketmq").option("nameServer", cluster.namesrv_addr).option("topic", topic).mode(
            "append"
        ).save()


def test_stream_write_keys_are_deterministic_across_a_replayed_batch(
    spark: SparkSession, cluster: ThreadedCluster, tmp_path: Path
) -> None:
    source, target = new_topic(cluster, queues=1), new_topic(cluster, queues=1)
    fill(cluster, MessageQueue(source, "broker-a", 0), 30)
    fill(cluster, MessageQueue(source, "broker-b", 0), 20)
    checkpoint = str(tmp_path / "checkpoint")

    def run() -> None:
        frame = (
            spark.readStream.format("rocketmq")
            .options(
                nameServer=cluster.namesrv_addr, topic=source, startingOffsets="earliest", maxOffsetsPerTrigger="20"
            )
            .load()
        )
        query = (
            frame.selectExpr("body", "tags", "concat(brokerName, ':', queueOffset) as keys")
            .writeStream.format("rocketmq")
            .option("nameServer", cluster.namesrv_addr)
            .option("topic", target)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None

    run()
    first = read_back(spark, cluster, target)
    assert len(first) == 50 and len({r.keys for r in first}) == 50  # every row sent once
    assert len({r.msgId for r in first}) == 50
    assert all(re.fullmatch(r"[0-9a-f-]{36}-\d+-\d+-\d+", r.msgId) for r in first)  # query-batch-partition-seq
    # a crash after the rows were sent but before Spark recorded the batch: Spark runs it again
    commits = sorted(glob.glob(os.path.join(checkpoint, "commits", "[0-9]*")), key=lambda p: int(os.path.basename(p)))
    last = commits[-1]
    os.remove(last)
    crc = os.path.join(os.path.dirname(last), f".{os.path.basename(last)}.crc")
    if os.path.exists(crc):
        os.remove(crc)
    run()
    again = read_back(spark, cluster, target)
    replayed = len(again) - len(first)
    assert replayed > 0  # at least once: the replayed rows arrive twice ...
    by_id: dict[str, set[str]] = {}
    for row in again:
        by_id.setdefault(row.msgId, set()).add(row.keys)
    assert len(by_id) == 50 and all(len(keys) == 1 for keys in by_id.values())  # ... under the same keys
