"""A job on a Spark standalone cluster (a master and a worker of their own, the driver in spark-submit,
executors in the worker's JVM): the connector keeps nothing in the driver's memory that the executors
or the streaming source's driver process need."""

from __future__ import annotations

from pathlib import Path

from rocketq.client import MessageQueue, SyncQueueReader
from rocketq.testing import ThreadedCluster

from .helpers import body, fill, new_topic
from .standalone import StandaloneCluster

JOB = Path(__file__).resolve().parent / "standalone_job.py"


def test_a_streaming_copy_on_a_standalone_cluster(cluster: ThreadedCluster, tmp_path: Path) -> None:
    source, target = new_topic(cluster, queues=2), new_topic(cluster, queues=1)
    queues = [MessageQueue(source, broker, queue_id) for broker in ("broker-a", "broker-b") for queue_id in (0, 1)]
    for index, queue in enumerate(queues):
        fill(cluster, queue, 10 * (index + 1), tags=["t"])
    with StandaloneCluster(tmp_path / "spark") as spark_cluster:
        finished = spark_cluster.submit(JOB, cluster.namesrv_addr, source, target, str(tmp_path / "checkpoint"))
    assert finished.returncode == 0, finished.stderr[-4000:]
    assert "copied 100" in finished.stdout
    with SyncQueueReader(cluster.namesrv_addr) as reader:
        copied = sorted(
            m.body for queue in reader.queues(target) for m in reader.messages(queue, 0, reader.max_offset(queue))
        )
    assert copied == sorted(body(q, n).upper() for i, q in enumerate(queues) for n in range(10 * (i + 1)))
