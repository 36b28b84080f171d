"""failOnDataLoss: messages that aged out before a query read them fail it, or are skipped with a warning."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from rocketq.client import MessageQueue, SyncAdminClient
from rocketq.testing import ThreadedCluster

from .helpers import fill


@pytest.fixture
def aging(tmp_path: Path) -> Iterator[ThreadedCluster]:
    """One broker with tiny CommitLog files and no retention time, and a one-queue topic ``Aging``."""
    with ThreadedCluster(
        tmp_path / "cluster",
        mapped_file_size_commit_log=32 * 1024,
        mapped_file_size_consume_queue=20 * 8,
        file_reserved_time=0.0,
    ) as cluster:
        with SyncAdminClient(cluster.namesrv_addr) as admin:
            admin.update_topic("Aging", cluster="DefaultCluster", read_queues=1, write_queues=1)
        yield cluster


def age(cluster: ThreadedCluster) -> int:
    """Delete every CommitLog file but the one being written; the queue's new first offset."""
    time.sleep(0.01)  # the files must be older than file_reserved_time (0 hours)

    async def run_retention() -> int:
        return cluster.cluster.brokers[0].store.retention.run(force=True)

    assert cluster.call(run_retention()) > 0
    with SyncAdminClient(cluster.namesrv_addr) as admin:
        [status] = admin.topic_status("Aging")
    return status.min_offset


def test_aged_out_messages_fail_the_query_or_are_skipped(
    spark: SparkSession, aging: ThreadedCluster, tmp_path: Path
) -> None:
    queue = MessageQueue("Aging", "broker-a", 0)
    fill(aging, queue, 10, size=1024)

    def run(**extra: str) -> None:
        frame = (
            spark.readStream.format("rocketmq")
            .options(nameServer=aging.namesrv_addr, topic="Aging", startingOffsets="earliest", **extra)
            .load()
        )
        query = (
            frame.select("queueOffset")
            .writeStream.format("parquet")
            .option("path", str(tmp_path / "data"))
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)

    run()
    fill(aging, queue, 80, start=10, size=1024)
    low = age(aging)
    assert 10 < low < 90
    with pytest.raises(StreamingQueryException, match="failOnDataLoss"):
        run()
    run(failOnDataLoss="false")  # the failed micro-batch again, skipping what is gone
    offsets = sorted(r.queueOffset for r in spark.read.parquet(str(tmp_path / "data")).collect())
    assert offsets == list(range(10)) + list(range(low, 90))

    batch = spark.read.format("rocketmq").options(
        nameServer=aging.namesrv_addr, topic="Aging", startingOffsets=json.dumps({"Aging": {"broker-a": {"0": 0}}})
    )
    with pytest.raises(Exception, match="no longer kept"):
        batch.load().count()
    assert batch.option("failOnDataLoss", "false").load().count() == 90 - low
