"""The ``rocketmq-store`` data source on stores a real broker wrote: exact rows, queue selection, several
ConsumeQueue files per queue, an empty topic, bad options, files left untouched, and reads beside a
broker that keeps writing (consistent prefixes, never a torn record)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from rocketq.client import Message, SendResult, SyncProducer
from rocketq.client.admin import AdminClient
from rocketq.spark.schema import message_schema
from rocketq.spark.store_source import StoreDataSource
from rocketq.testing import ThreadedCluster

TOPIC = "Orders"
EMPTY = "Quiet"
QUEUES = 4
PER_FILE = 25  # ConsumeQueue entries per file: 100 messages a queue make 4 files
SMALL_FILES = {"mapped_file_size_consume_queue": 20 * PER_FILE, "mapped_file_size_commit_log": 256 * 1024}


@pytest.fixture(scope="module", autouse=True)
def registered(spark: SparkSession) -> None:
    spark.dataSource.register(StoreDataSource)


def create_topics(cluster: ThreadedCluster, *topics: str) -> None:
    async def create() -> None:
        async with AdminClient(cluster.namesrv_addr) as admin:
            for topic in topics:
                await admin.update_topic(topic, cluster="DefaultCluster", read_queues=QUEUES, write_queues=QUEUES)

    cluster.call(create())


def message(index: int, topic: str = TOPIC) -> Message:
    return Message(
        topic,
        f"body-{index}-".encode() * (1 + index % 7),
        tags=None if index % 3 == 0 else f"tag{index % 3}",
        keys=None if index % 4 == 0 else [f"k{index}", "äü"],
        properties={"n": str(index)},
    )


@dataclass(frozen=True)
class WrittenStore:
    root: Path
    sent: list[tuple[Message, SendResult]]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> WrittenStore:
    """A store a broker wrote (400 messages over 4 queues, plus an empty topic), the broker then stopped."""
    root = tmp_path_factory.mktemp("store-source")
    sent = []
    with ThreadedCluster(root, brokers=1, **SMALL_FILES) as cluster:
        create_topics(cluster, TOPIC, EMPTY)
        with SyncProducer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            sent = [(m, producer.send(m)) for m in map(message, range(400))]
    return WrittenStore(root / "broker-0", sent)


def load(spark: SparkSession, path: Path, **options: str) -> DataFrame:
    reader = spark.read.format("rocketmq-store").option("topic", TOPIC)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load(str(path))


def expected(sent: list[tuple[Message, SendResult]], queues: set[int] | None = None) -> set[tuple[object, ...]]:
    rows = set()
    for m, result in sent:
        queue = result.message_queue.queue_id
        if queues is None or queue in queues:
            keys = None if m.keys is None else " ".join(m.keys)
            rows.add((TOPIC, "broker-a", queue, result.queue_offset, result.msg_id, m.tags, keys, m.body))
    return rows


def rows(frame: DataFrame) -> set[tuple[object, ...]]:
    columns = ["topic", "brokerName", "queueId", "queueOffset", "msgId", "tags", "keys", "body"]
    return {(*row[:-1], bytes(row[-1])) for row in frame.select(*columns).collect()}


def test_reads_exactly_what_the_broker_stored(spark: SparkSession, written: WrittenStore) -> None:
    frame = load(spark, written.root, brokerName="broker-a", includeProperties="true")
    assert frame.schema == message_schema(True)
    assert frame.rdd.getNumPartitions() == 1  # 400 messages: packed into one task
    assert rows(frame) == expected(written.sent)
    by_id = {result.msg_id: m for m, result in written.sent}
    for row in frame.select("msgId", "properties", "bornTimestamp", "storeTimestamp").collect():
        assert row["properties"]["n"] == by_id[row["msgId"]].properties["n"]
        assert row["properties"]["UNIQ_KEY"] == row["msgId"]
        assert row["bornTimestamp"] <= row["storeTimestamp"]


@pytest.mark.parametrize(
    ("partitions", "max_records", "tasks"),
    [("1", "1000", 1), ("4", "250", 2), ("2", "150", 4), ("2", "30", 16), ("100", "7", 60)],
)
def test_every_message_is_read_exactly_once_however_the_queues_are_packed(
    spark: SparkSession, written: WrittenStore, partitions: str, max_records: str, tasks: int
) -> None:
    """Ranges cut inside ConsumeQueue files and across them, several queues in a task: no message twice,
    none left out. The gathered rows (no properties) are the scanned ones (with properties) too."""
    frame = load(spark, written.root, brokerName="broker-a", partitions=partitions, maxRecordsPerPartition=max_records)
    assert frame.rdd.getNumPartitions() == tasks
    columns = frame.columns
    collected = frame.select(*columns).collect()
    assert len(collected) == 400
    assert rows(frame) == expected(written.sent)
    scanned = load(spark, written.root, brokerName="broker-a", includeProperties="true", batchSize="9")
    assert sorted(collected) == sorted(scanned.select(*columns).collect())


def test_selected_queues_and_the_default_broker_name(spark: SparkSession, written: WrittenStore) -> None:
    frame = load(spark, written.root, queueIds="3, 1")
    assert "properties" not in frame.columns
    assert {row["brokerName"] for row in frame.select("brokerName").distinct().collect()} == {"broker-0"}
    found = {(*row[:1], "broker-a", *row[2:]) for row in rows(frame)}
    assert found == expected(written.sent, {1, 3})


def test_an_empty_topic_and_an_unknown_queue_read_as_empty(spark: SparkSession, written: WrittenStore) -> None:
    assert load(spark, written.root).filter("queueId = 9").count() == 0
    empty = spark.read.format("rocketmq-store").option("topic", EMPTY).load(str(written.root))
    assert empty.count() == 0 and empty.schema == message_schema(False)
    assert load(spark, written.root, queueIds="9").count() == 0


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"queueIds": "1,x"}, "queueIds"),
        ({"includeProperties": "yes"}, "includeProperties"),
        ({"batchSize": "0"}, "batchSize"),
        ({"partitions": "-1"}, "partitions"),
        ({"maxRecordsPerPartition": "x"}, "maxRecordsPerPartition"),
        ({"queueId": "1"}, "queueid"),
        ({"topic": " "}, "topic"),
    ],
)
def test_a_bad_option_fails_the_load_naming_it(
    spark: SparkSession, written: WrittenStore, options: dict[str, str], named: str
) -> None:
    with pytest.raises(Exception, match=named):
        load(spark, written.root, **options).schema  # noqa: B018 (the load itself raises)


def test_a_missing_store_fails_the_load(spark: SparkSession, written: WrittenStore) -> None:
    with pytest.raises(Exception, match="option path"):
        load(spark, written.root / "absent")


def snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    return {
        str(path.relative_to(root)): (
            path.stat().st_size,
            path.stat().st_mtime_ns,
            hashlib.sha1(path.read_bytes()).hexdigest(),
        )
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_reading_leaves_every_file_as_it_was(spark: SparkSession, written: WrittenStore) -> None:
    before = snapshot(written.root)
    assert load(spark, written.root, includeProperties="true").count() == 400
    assert snapshot(written.root) == before


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[ThreadedCluster, Path]]:
    with ThreadedCluster(tmp_path, brokers=1, mapped_file_size_consume_queue=20 * 500) as cluster:
        create_topics(cluster, TOPIC)
        yield cluster, tmp_path / "broker-0"


def test_reads_beside_a_writing_broker_are_consistent_prefixes(
    spark: SparkSession, live: tuple[ThreadedCluster, Path]
) -> None:
    cluster, root = live
    stop = threading.Event()
    sent: list[SendResult] = []

    def keep_sending() -> None:
        with SyncProducer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            index = 0
            while not stop.wait(0.02) and index < 30_000:  # about 1000 messages a second
                batch = [Message(TOPIC, f"live-{index + k}".encode(), keys=f"k{index + k}") for k in range(20)]
                sent.extend(producer.send(m) for m in batch)
                index += len(batch)

    writer = threading.Thread(target=keep_sending)
    writer.start()
    counts = []
    try:
        while len(counts) < 3:
            if len(sent) < 100 * (len(counts) + 1):
                stop.wait(0.02)
                continue
            found = load(spark, root, checkCrc="true").select("queueId", "queueOffset", "body", "keys").collect()
            by_queue: dict[int, list[int]] = {}
            for row in found:
                assert row["keys"] == "k" + bytes(row["body"]).decode().removeprefix("live-")  # never torn
                by_queue.setdefault(row["queueId"], []).append(row["queueOffset"])
            for offsets in by_queue.values():
                assert sorted(offsets) == list(range(len(offsets)))  # a prefix of every queue
            counts.append(len(found))
    finally:
        stop.set()
        writer.join()
    cluster.call(cluster.cluster.wait_dispatched())
    final = load(spark, root).select("msgId").collect()
    assert sorted(row["msgId"] for row in final) == sorted(result.msg_id for result in sent)
    assert counts == sorted(counts) and 0 < counts[0] < len(final)  # the broker wrote while we read
