"""Batch reads of exact offset ranges: every queue a task, the options' bounds, tag filters, and bad
options failing at load()."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.utils import AnalysisException

from rocketq.client import MessageQueue
from rocketq.testing import ThreadedCluster

from .helpers import fill, new_topic


def rows(spark: SparkSession, **options: str) -> list[tuple[str, int, int, bytes]]:
    frame = spark.read.format("rocketmq").options(**options).load()
    return sorted((r.brokerName, r.queueId, r.queueOffset, bytes(r.body)) for r in frame.collect())


def test_reads_exact_ranges_of_every_queue(spark: SparkSession, cluster: ThreadedCluster) -> None:
    topic = new_topic(cluster)
    a0, a1, b1 = (
        MessageQueue(topic, "broker-a", 0),
        MessageQueue(topic, "broker-a", 1),
        MessageQueue(topic, "broker-b", 1),
    )
    fill(cluster, a0, 30)
    fill(cluster, a1, 5)
    fill(cluster, b1, 12)
    base = {"nameServer": cluster.namesrv_addr, "topic": topic}
    everything = rows(spark, **base)
    assert len(everything) == 47
    assert everything[0] == ("broker-a", 0, 0, b"broker-a/0/0") and everything[-1] == (
        "broker-b",
        1,
        11,
        b"broker-b/1/11",
    )
    bounded = rows(
        spark,
        **base,
        startingOffsets=json.dumps({topic: {"broker-a": {"0": 10, "1": -2}, "broker-b": {"1": 3}}}),
        endingOffsets=json.dumps({topic: {"broker-a": {"0": 20, "1": -1}, "broker-b": {"1": 4}}}),
        pullBatchSize="3",
    )
    assert [(b, q, o) for b, q, o, _ in bounded] == (
        [("broker-a", 0, o) for o in range(10, 20)] + [("broker-a", 1, o) for o in range(5)] + [("broker-b", 1, 3)]
    )
    frame = spark.read.format("rocketmq").options(**base, minPartitions="6").load()
    assert frame.rdd.getNumPartitions() >= 6 and frame.count() == 47


def test_schema_values_and_properties(spark: SparkSession, cluster: ThreadedCluster) -> None:
    topic = new_topic(cluster, queues=1)
    queue = MessageQueue(topic, "broker-b", 0)
    fill(cluster, queue, 3, tags=["TagA"])
    frame = (
        spark.read.format("rocketmq")
        .option("nameServer", cluster.namesrv_addr)
        .option("topic", topic)
        .option("includeProperties", "true")
        .load()
    )
    assert frame.columns[-1] == "properties"
    row = frame.orderBy("queueOffset").first()
    assert row is not None
    assert (row.topic, row.brokerName, row.queueId, row.queueOffset, row.tags, row.keys) == (
        topic,
        "broker-b",
        0,
        0,
        "TagA",
        "k0",
    )
    assert row.properties["TAGS"] == "TagA" and row.msgId == row.properties["UNIQ_KEY"]
    assert row.storeTimestamp >= row.bornTimestamp and row.reconsumeTimes == 0


def test_tag_filter_is_applied(spark: SparkSession, cluster: ThreadedCluster) -> None:
    topic = new_topic(cluster, queues=1)
    queue = MessageQueue(topic, "broker-a", 0)
    fill(cluster, queue, 40, tags=["Aa", "BB", "C", None])  # Aa and BB share a hash code
    got = rows(spark, nameServer=cluster.namesrv_addr, topic=topic, subExpression="Aa || C", pullBatchSize="7")
    assert [o for _, _, o, _ in got] == [o for o in range(40) if o % 4 in (0, 2)]


@pytest.mark.parametrize(
    ("option", "value", "named"),
    [
        ("startingOffsets", "newest", "startingOffsets"),
        ("maxOffsetsPerTrigger", "-5", "maxOffsetsPerTrigger"),
        ("topic", "NoSuchTopic", "NoSuchTopic"),
        ("startingTimestamp", "now", "startingTimestamp"),
    ],
)
def test_a_bad_option_fails_at_load(
    spark: SparkSession, cluster: ThreadedCluster, option: str, value: str, named: str
) -> None:
    options = {"nameServer": cluster.namesrv_addr, "topic": new_topic(cluster, queues=1), option: value}
    with pytest.raises(AnalysisException, match=named):
        spark.read.format("rocketmq").options(**options).load()


def test_sql_filter_reaches_the_broker(spark: SparkSession, cluster: ThreadedCluster) -> None:
    """The sqlFilter goes to the broker with the pull (expressionType SQL92): a broker that filters by
    SQL92 returns the matching messages, one that cannot refuses the pull naming the filter type."""
    topic = new_topic(cluster, queues=1)
    fill(cluster, MessageQueue(topic, "broker-a", 0), 12, tags=["A", "B", "C"])
    frame = spark.read.format("rocketmq").options(nameServer=cluster.namesrv_addr, topic=topic, sqlFilter="TAGS = 'A'")
    try:
        offsets = sorted(r.queueOffset for r in frame.load().collect())
    except Exception as exc:
        assert "SQL92" in str(exc)
    else:
        assert offsets == [0, 3, 6, 9]
