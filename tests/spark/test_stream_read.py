"""Streaming reads: Trigger.AvailableNow and processing-time triggers, resuming from the checkpoint with no
message missed or repeated, rate limits, a topic gaining queues, consumer-group progress."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from rocketq.client import MessageQueue, SyncAdminClient
from rocketq.testing import ThreadedCluster

from .helpers import body, fill, new_topic


def start(spark: SparkSession, out: Path, trigger: dict[str, object], **options: str) -> StreamingQuery:
    """A query from the options' stream into Parquet files under ``out`` (checkpoint beside them)."""
    frame = spark.readStream.format("rocketmq").options(startingOffsets="earliest", **options).load()
    writer = frame.select("brokerName", "queueId", "queueOffset", "body").writeStream.format("parquet")
    writer = writer.option("path", str(out / "data")).option("checkpointLocation", str(out / "checkpoint"))
    return writer.trigger(**trigger).start()  # type: ignore[arg-type]


def run(spark: SparkSession, out: Path, **options: str) -> StreamingQuery:
    query = start(spark, out, {"availableNow": True}, **options)
    query.awaitTermination(120)
    assert not query.isActive and query.exception() is None
    return query


def written(spark: SparkSession, out: Path) -> Counter[tuple[str, int, int, bytes]]:
    if not (out / "data").exists():
        return Counter()
    frame = spark.read.parquet(str(out / "data"))
    return Counter((r.brokerName, r.queueId, r.queueOffset, bytes(r.body)) for r in frame.collect())


def expected(queues: dict[MessageQueue, int]) -> Counter[tuple[str, int, int, bytes]]:
    return Counter((q.broker_name, q.queue_id, n, body(q, n)) for q, count in queues.items() for n in range(count))


def batches(query: StreamingQuery) -> list[int]:
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]


def test_available_now_then_restart_reads_every_message_once(
    spark: SparkSession, cluster: ThreadedCluster, tmp_path: Path
) -> None:
    topic = new_topic(cluster)
    a0, b1 = MessageQueue(topic, "broker-a", 0), MessageQueue(topic, "broker-b", 1)
    fill(cluster, a0, 7)
    fill(cluster, b1, 5)
    options = {"nameServer": cluster.namesrv_addr, "topic": topic}
    first = run(spark, tmp_path, **options)
    assert written(spark, tmp_path) == expected({a0: 7, b1: 5})
    assert json.loads(first.lastProgress["sources"][0]["endOffset"]) == {
        topic: {"broker-a": {"0": 7, "1": 0}, "broker-b": {"0": 0, "1": 5}}
    }
    fill(cluster, a0, 3, start=7)
    fill(cluster, b1, 4, start=5)
    second = run(spark, tmp_path, **options)
    assert written(spark, tmp_path) == expected({a0: 10, b1: 9})  # the new ones only, each once
    assert sum(batches(second)) == 7
    assert run(spark, tmp_path, **options).recentProgress == [] or written(spark, tmp_path) == expected({a0: 10, b1: 9})


def test_max_offsets_per_trigger_splits_the_backlog(
    spark: SparkSession, cluster: ThreadedCluster, tmp_path: Path
) -> None:
    topic = new_topic(cluster, queues=1)
    a, b = MessageQueue(topic, "broker-a", 0), MessageQueue(topic, "broker-b", 0)
    fill(cluster, a, 30)
    fill(cluster, b, 10)
    query = run(spark, tmp_path, nameServer=cluster.namesrv_addr, topic=topic, maxOffsetsPerTrigger="8")
    sizes = batches(query)
    assert len(sizes) >= 5 and all(size <= 8 + 1 for size in sizes) and sum(sizes) == 40
    assert written(spark, tmp_path) == expected({a: 30, b: 10})


def test_processing_time_trigger_stopped_midway_then_resumed(
    spark: SparkSession, cluster: ThreadedCluster, tmp_path: Path
) -> None:
    topic = new_topic(cluster, queues=1)
    a, b = MessageQueue(topic, "broker-a", 0), MessageQueue(topic, "broker-b", 0)
    fill(cluster, a, 20)
    options = {"nameServer": cluster.namesrv_addr, "topic": topic, "maxOffsetsPerTrigger": "6", "subExpression": "*"}
    query = start(spark, tmp_path, {"processingTime": "200 milliseconds"}, **options)
    try:
        deadline = time.monotonic() + 60
        while sum(batches(query)) < 12:  # a few triggers have run
            assert time.monotonic() < deadline and query.exception() is None
            time.sleep(0.1)
        fill(cluster, b, 10)  # arrives while the query runs
    finally:
        query.stop()
    got = written(spark, tmp_path)
    assert got and max(got.values()) == 1 and set(got) <= set(expected({a: 20, b: 10}))
    run(spark, tmp_path, **options)
    assert written(spark, tmp_path) == expected({a: 20, b: 10})


def test_a_topic_gaining_queues_is_read_from_their_start(
    spark: SparkSession, cluster: ThreadedCluster, tmp_path: Path
) -> None:
    topic = new_topic(cluster, queues=1)
    a0 = MessageQueue(topic, "broker-a", 0)
    fill(cluster, a0, 4)
    options = {"nameServer": cluster.namesrv_addr, "topic": topic}
    run(spark, tmp_path, **options)
    with SyncAdminClient(cluster.namesrv_addr) as admin:
        admin.update_topic(topic, cluster="DefaultCluster", read_queues=3, write_queues=3)
    a2, b1 = MessageQueue(topic, "broker-a", 2), MessageQueue(topic, "broker-b", 1)
    fill(cluster, a2, 5)
    fill(cluster, b1, 2)
    query = run(spark, tmp_path, **options)
    assert written(spark, tmp_path) == expected({a0: 4, a2: 5, b1: 2})
    end = json.loads(query.lastProgress["sources"][0]["endOffset"])
    assert end[topic]["broker-a"] == {"0": 4, "1": 0, "2": 5} and end[topic]["broker-b"]["1"] == 2


def test_consumer_group_shows_the_progress(spark: SparkSession, cluster: ThreadedCluster, tmp_path: Path) -> None:
    topic = new_topic(cluster, queues=1)
    a = MessageQueue(topic, "broker-a", 0)
    fill(cluster, a, 20)
    options = {"nameServer": cluster.namesrv_addr, "topic": topic, "consumerGroup": f"{topic}-pipeline"}
    run(spark, tmp_path, maxOffsetsPerTrigger="5", **options)
    with SyncAdminClient(cluster.namesrv_addr) as admin:

        def committed() -> int:
            rows = admin.consumer_progress(f"{topic}-pipeline", topic)
            return next(r.consumer_offset for r in rows if r.broker_name == "broker-a" and r.queue_id == 0)

        assert committed() == 20  # the last micro-batch of the run included
        fill(cluster, a, 4, start=20)
        run(spark, tmp_path, **options)
        assert committed() == 24
