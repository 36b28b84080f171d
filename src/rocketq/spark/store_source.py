"""The ``rocketmq-store`` data source: a batch read of one topic straight from a broker's store directory.

``spark.read.format("rocketmq-store").option("topic", "orders").load("/data/broker-a/store")`` reads
the topic's ConsumeQueues and CommitLog files with ``rocketq.store.readonly.StoreReader`` (read-only
maps, no lock, nothing written, so it runs beside a live broker or on a copy of a store) and decodes
them with ``rocketq.client.columns`` into Arrow batches of the same row schema as the ``rocketmq``
source (``rocketq.spark.schema.message_schema``). Executors must see the directory (local mode, or a
shared filesystem).

Options (names are case-insensitive; a bad value fails at ``load()`` naming the option):

====================== ======================================================================
``path``               the store root (the broker's ``storePathRootDir``); required, also as
                       ``load(path)``
``topic``              the topic to read; required. A topic without ConsumeQueues reads as empty
``queueIds``           comma-separated queue ids (default: every queue the store has); a queue
                       without entries reads as empty
``brokerName``         the ``brokerName`` column's value (records do not carry it); default: the
                       name of the store directory
``includeProperties``  ``true`` adds the ``properties`` map column (default ``false``)
``failOnDataLoss``     ``true`` (default): fail when data planned for the read was deleted by
                       retention before a task read it; ``false``: skip it
``checkCrc``           ``true`` (default): check every record's body CRC; ``false`` is faster
``maxRecordsPerTask``  split a ConsumeQueue file's range into tasks of at most this many
                       entries (default 1,000,000)
``batchSize``          rows per Arrow batch a task yields (default 16,384)
====================== ======================================================================

What is read: each queue from its first entry whose record is still on disk to its last complete
entry when the query is planned. One task per ConsumeQueue file range (split by
``maxRecordsPerTask``), queue by queue in offset order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from rocketq.client.columns import columns_batch
from rocketq.spark.schema import message_schema
from rocketq.spark.worker_heap import after_first_batch
from rocketq.store.readonly import StoreReader

FORMAT: Final = "rocketmq-store"
_TRUE_FALSE: Final = {"true": True, "false": False}
DEFAULT_MAX_RECORDS_PER_TASK: Final = 1_000_000
DEFAULT_BATCH_SIZE: Final = 16_384


@dataclass(frozen=True, slots=True)
class StoreOptions:
    """The parsed options (see the module docstring)."""

    path: str
    topic: str
    queue_ids: tuple[int, ...] | None
    broker_name: str
    include_properties: bool
    fail_on_data_loss: bool
    check_crc: bool
    max_records_per_task: int
    batch_size: int

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> StoreOptions:
        """Parse Spark's options (their keys are lower-cased by Spark).

        Raises:
            ValueError: An option is missing, unknown or has a bad value; the message names it.
        """
        given = {key.lower(): value for key, value in options.items()}
        unknown = sorted(set(given) - set(_OPTION_NAMES))
        if unknown:
            names = ", ".join(_OPTION_NAMES.values())
            raise ValueError(f"{FORMAT}: unknown option(s) {', '.join(unknown)}; the options are {names}")
        path = given.get("path", "").strip()
        if not path:
            raise ValueError(f"{FORMAT}: option path (the store directory) is required")
        if not Path(path).is_dir():
            raise ValueError(f"{FORMAT}: option path: {path} is not a directory")
        topic = given.get("topic", "").strip()
        if not topic:
            raise ValueError(f"{FORMAT}: option topic is required")
        broker_name = given.get("brokername", "").strip() or Path(path).resolve().name
        return cls(
            path=path,
            topic=topic,
            queue_ids=_queue_ids(given["queueids"]) if "queueids" in given else None,
            broker_name=broker_name,
            include_properties=_flag(given, "includeProperties", False),
            fail_on_data_loss=_flag(given, "failOnDataLoss", True),
            check_crc=_flag(given, "checkCrc", True),
            max_records_per_task=_positive(given, "maxRecordsPerTask", DEFAULT_MAX_RECORDS_PER_TASK),
            batch_size=_positive(given, "batchSize", DEFAULT_BATCH_SIZE),
        )


_OPTION_NAMES: Final = {
    name.lower(): name
    for name in (
        "path",
        "topic",
        "queueIds",
        "brokerName",
        "includeProperties",
        "failOnDataLoss",
        "checkCrc",
        "maxRecordsPerTask",
        "batchSize",
    )
}
"""Lower-cased option name (as Spark hands it over) -> the documented spelling."""


def _flag(given: Mapping[str, str], name: str, default: bool) -> bool:
    text = given.get(name.lower())
    if text is None:
        return default
    value = _TRUE_FALSE.get(text.strip().lower())
    if value is None:
        raise ValueError(f"{FORMAT}: option {name} must be true or false, not {text!r}")
    return value


def _positive(given: Mapping[str, str], name: str, default: int) -> int:
    text = given.get(name.lower())
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{FORMAT}: option {name} must be a positive integer, not {text!r}")
    return value


def _queue_ids(text: str) -> tuple[int, ...]:
    try:
        ids = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        ids = [-1]
    if not ids or ids[0] < 0:
        raise ValueError(f"{FORMAT}: option queueIds must be a comma-separated list of queue ids, not {text!r}")
    return tuple(ids)


class QueueRange(InputPartition):
    """One task: queue offsets ``[start, end)`` of one queue (within one ConsumeQueue file)."""

    def __init__(self, queue_id: int, start: int, end: int) -> None:
        super().__init__(None)
        self.queue_id = queue_id
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"QueueRange(queue_id={self.queue_id}, start={self.start}, end={self.end})"


def plan(reader: StoreReader, options: StoreOptions) -> list[QueueRange]:
    """The tasks of a read: each queue's readable range cut at ConsumeQueue file boundaries and into
    pieces of at most ``max_records_per_task``; empty ranges dropped."""
    queue_ids = reader.queue_ids(options.topic) if options.queue_ids is None else options.queue_ids
    ranges = []
    for queue_id in queue_ids:
        low, high = reader.offset_range(options.topic, queue_id)
        for queue_file in reader.queue_files(options.topic, queue_id):
            start = max(low, queue_file.first_offset)
            end = min(high, queue_file.first_offset + queue_file.entries)
            for piece in range(start, end, options.max_records_per_task):
                ranges.append(QueueRange(queue_id, piece, min(end, piece + options.max_records_per_task)))
    return ranges


class StoreDataSource(DataSource):
    """``spark.read.format("rocketmq-store")``: see the module docstring for the options."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        return message_schema(StoreOptions.parse(self.options).include_properties)

    def reader(self, schema: StructType) -> StoreDataSourceReader:
        options = StoreOptions.parse(self.options)
        expected = message_schema(options.include_properties)
        if schema != expected:
            raise ValueError(f"{FORMAT}: the schema is fixed ({expected.simpleString()}); do not pass one")
        return StoreDataSourceReader(options)


class StoreDataSourceReader(DataSourceReader):
    """Plans on the driver, reads in the tasks; holds only the options (it is pickled to the tasks)."""

    def __init__(self, options: StoreOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        with StoreReader(self.options.path, check_crc=self.options.check_crc) as reader:
            return plan(reader, self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return after_first_batch(self._batches(partition))

    def _batches(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        options = self.options
        if not isinstance(partition, QueueRange):  # nothing to read: Spark runs one InputPartition(None)
            return
        with StoreReader(options.path, check_crc=options.check_crc) as reader:
            for chunk in reader.read(
                options.topic,
                partition.queue_id,
                partition.start,
                partition.end,
                max_records=options.batch_size,
                skip_aged_out=not options.fail_on_data_loss,
            ):
                yield columns_batch(
                    chunk.records, broker_name=options.broker_name, include_properties=options.include_properties
                )
