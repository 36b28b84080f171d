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
``partitions``         about how many tasks read (default: the CPU count of the machine that
                       plans the query, Spark's default parallelism in local mode)
``maxRecordsPerPartition``  at most this many messages per task (default 10,000,000; the
                       former name ``maxRecordsPerTask`` is still taken)
``batchSize``          rows per Arrow batch a task yields at most (default 262,144; a batch also
                       holds at most 64 MiB of records)
====================== ======================================================================

What is read: each queue from its first entry whose record is still on disk to its last complete
entry when the query is planned. The queues' ranges are packed into tasks as Spark's file sources
pack files (``rocketq.spark.planning.pack_ranges``): about ``partitions`` tasks of similar size, a
range cut where it is bigger than a task's share, none over ``maxRecordsPerPartition``. A task
decodes each batch from the mapped CommitLog in one compiled pass (``StoreReader.read``, the decode
of ``rocketq.client.columns`` that the ``rocketmq`` source uses too) and checks it against the entries.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from rocketq.client.columns import arrow_memory, filled_batch
from rocketq.spark.planning import pack_ranges
from rocketq.spark.schema import message_schema
from rocketq.spark.worker_heap import after_first_batch
from rocketq.store.readonly import StoreReader

FORMAT: Final = "rocketmq-store"
_TRUE_FALSE: Final = {"true": True, "false": False}
DEFAULT_MAX_RECORDS_PER_PARTITION: Final = 10_000_000
DEFAULT_BATCH_SIZE: Final = 262_144


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
    partitions: int
    max_records_per_partition: int
    batch_size: int

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> StoreOptions:
        """Parse Spark's options (their keys are lower-cased by Spark).

        Raises:
            ValueError: An option is missing, unknown or has a bad value; the message names it.
        """
        given = {key.lower(): value for key, value in options.items()}
        if "maxrecordspertask" in given:  # the former name
            given.setdefault("maxrecordsperpartition", given.pop("maxrecordspertask"))
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
            partitions=_positive(given, "partitions", os.cpu_count() or 1),
            max_records_per_partition=_positive(given, "maxRecordsPerPartition", DEFAULT_MAX_RECORDS_PER_PARTITION),
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
        "partitions",
        "maxRecordsPerPartition",
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


class QueueRanges(InputPartition):
    """One task: ranges ``(queue_id, start, end)`` of queue offsets, read one after the other."""

    def __init__(self, ranges: Sequence[tuple[int, int, int]]) -> None:
        super().__init__(None)
        self.ranges = tuple(ranges)

    def __repr__(self) -> str:
        return f"QueueRanges({list(self.ranges)})"


def plan(reader: StoreReader, options: StoreOptions) -> list[QueueRanges]:
    """The tasks of a read: each queue's readable range, packed into tasks (``pack_ranges``); no task
    when there is nothing to read."""
    queue_ids = reader.queue_ids(options.topic) if options.queue_ids is None else options.queue_ids
    ranges = [(queue_id, *reader.offset_range(options.topic, queue_id)) for queue_id in queue_ids]
    packed = pack_ranges(ranges, options.partitions, options.max_records_per_partition)
    return [QueueRanges(task) for task in packed]


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
        if not isinstance(partition, QueueRanges):  # nothing to read: Spark runs one InputPartition(None)
            return
        skip = not options.fail_on_data_loss
        with StoreReader(options.path, check_crc=options.check_crc) as reader:
            for queue_id, start, end in partition.ranges:
                for filled in reader.read(
                    options.topic,
                    queue_id,
                    start,
                    end,
                    max_records=options.batch_size,
                    skip_aged_out=skip,
                    include_properties=options.include_properties,
                    allocate=arrow_memory,
                ):
                    yield filled_batch(
                        filled, broker_name=options.broker_name, include_properties=options.include_properties
                    )
