"""The ``rocketmq`` data source: ``spark.read`` / ``spark.readStream`` of topics, ``df.write`` /
``df.writeStream`` into them.

``load()`` checks the options and asks the name servers for the topics, so a misspelt option, a bad
value or a missing topic fails there, naming what is wrong. A batch read plans one task per queue
(more with ``minPartitions``) over the offsets the options say; each task pulls exactly its range.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.types import StructType

from rocketq.spark.offsets import QueueRange, plan_ranges, resolve
from rocketq.spark.options import OptionError, SinkOptions, SourceOptions
from rocketq.spark.planning import report_data_loss
from rocketq.spark.read import ReadSettings, offset_for_timestamp, read_range, snapshot
from rocketq.spark.schema import message_schema
from rocketq.spark.worker_heap import after_first_batch

FORMAT = "rocketmq"


def read_settings(options: SourceOptions) -> ReadSettings:
    return ReadSettings(
        name_server=options.name_server,
        selector=options.selector,
        pull_batch_size=options.pull_batch_size,
        timeout_s=options.request_timeout_s,
        include_properties=options.include_properties,
        fail_on_data_loss=options.fail_on_data_loss,
        max_pull_bytes=options.max_pull_bytes,
    )


class RocketMQDataSource(DataSource):
    """``format("rocketmq")``: see ``docs/spark.md`` for the options, the row schema and the guarantees."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        """Called by ``load()``: the options are checked and the topics looked up here."""
        options = SourceOptions.parse(self.options, streaming=None)
        reader = read_settings(options).reader()
        for topic in options.topics:
            try:
                reader.queues(topic)
            except Exception as exc:
                raise OptionError("topic", f"cannot read topic {topic!r} via {options.name_server}: {exc}") from exc
        return message_schema(options.include_properties)

    def reader(self, schema: StructType) -> DataSourceReader:
        return RocketMQBatchReader(SourceOptions.parse(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from rocketq.spark.stream import RocketMQStreamReader

        return RocketMQStreamReader(SourceOptions.parse(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from rocketq.spark.sink import RocketMQBatchWriter

        return RocketMQBatchWriter(SinkOptions.parse(self.options), schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from rocketq.spark.sink import RocketMQStreamWriter

        return RocketMQStreamWriter(SinkOptions.parse(self.options), schema, overwrite)


class RocketMQBatchReader(DataSourceReader):
    """A bounded read: ``startingOffsets`` (or ``startingTimestamp``) to ``endingOffsets`` (or
    ``endingTimestamp``), resolved when the query is planned."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options  # plain, picklable settings: this object is pickled into every task
        self.settings = read_settings(options)

    def partitions(self) -> Sequence[InputPartition]:
        options = self.options
        reader = self.settings.reader()
        taken = snapshot(reader, options.topics, tolerate_away_brokers=False)
        by_timestamp = functools.partial(offset_for_timestamp, reader)
        start = resolve(options.starting, "startingOffsets", taken.bounds, by_timestamp)
        end = resolve(options.ending, "endingOffsets", taken.bounds, by_timestamp)
        for key, (low, high) in sorted(taken.bounds.items()):
            if end[key] > high:
                raise OptionError("endingOffsets", f"{key} ends at {high}, before the offset {end[key]} asked for")
            if start[key] > end[key]:
                raise OptionError("endingOffsets", f"{key}: the end {end[key]} is before the start {start[key]}")
            if start[key] < low:
                report_data_loss(f"{key}: messages [{start[key]}, {low}) are no longer kept", options.fail_on_data_loss)
                start[key] = min(low, end[key])
        return [InputPartition(part) for part in plan_ranges(start, end, options.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        part: QueueRange = partition.value
        return after_first_batch(read_range(self.settings, part))
