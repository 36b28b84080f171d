"""A Spark batch read of the ``rocketmq`` source while a broker group's master is stopped: every range
is read from its slave, at the master's offsets (docs/replication.md#reads-from-slaves)."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from rocketq.client import MessageQueue
from rocketq.common.group_topics import TOOLS_CONSUMER_GROUP
from rocketq.testing import ThreadedCluster, eventually
from rocketq.testing.cluster import wait_replicated

from .helpers import body, fill, new_topic


def test_a_batch_read_with_the_master_stopped_reads_the_full_range_from_the_slave(
    spark: SparkSession, tmp_path: Path
) -> None:
    with ThreadedCluster(tmp_path, brokers=2) as cluster:
        slave = cluster.call(cluster.cluster.start_slave(0))
        topic = new_topic(cluster)
        a0, a1, b0 = (
            MessageQueue(topic, "broker-a", 0),
            MessageQueue(topic, "broker-a", 1),
            MessageQueue(topic, "broker-b", 0),
        )
        fill(cluster, a0, 40)
        fill(cluster, a1, 25)
        fill(cluster, b0, 10)
        master = cluster.cluster.brokers[0]
        cluster.call(wait_replicated(master.store.commit_log.max_offset, slave))
        cluster.call(eventually(lambda: slave.topics.get(topic) is not None, 20, what="the slave's copy of the topic"))
        cluster.call(master.aclose())

        frame = spark.read.format("rocketmq").options(nameServer=cluster.namesrv_addr, topic=topic, pullBatchSize="8")
        rows = sorted((r.brokerName, r.queueId, r.queueOffset, bytes(r.body)) for r in frame.load().collect())
        expected = [
            (q.broker_name, q.queue_id, n, body(q, n))
            for q, count in ((a0, 40), (a1, 25), (b0, 10))
            for n in range(count)
        ]
        assert rows == sorted(expected)
        assert slave.consume_rates.totals.get((TOOLS_CONSUMER_GROUP, topic), 0) == 65
