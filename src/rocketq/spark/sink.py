"""The ``rocketmq`` sink: ``df.write`` and ``df.writeStream`` into topics (columns: ``sink_rows``; what
happens on the brokers: ``sink_send``).

``deliveryGuarantee=atLeastOnce`` (the default): a task sends its rows in batches, several in flight,
and returns only when the broker acknowledged every one (a failed send fails the task, and Spark runs it
again). What a retried task or a replayed micro-batch sends again carries the same unique key
(``UNIQ_KEY``, the row's ``msgId``): ``<queryId>-<batchId>-<partition>-<seq>`` for a stream,
``<jobId>-<partition>-<seq>`` for a batch write.

``deliveryGuarantee=exactlyOnce``: a task sends its rows as the half messages of its part of the
micro-batch's transaction (``sink_commit``) and reports where they are; the driver's ``commit`` makes
the reported parts visible, broker by broker, each broker atomically, and rolls back the rest; a broker
that committed the transaction before drops a replay of it; ``abort`` rolls it back. A batch write is
one such transaction for the whole job.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from rocketq.spark.options import SinkOptions
from rocketq.spark.sink_commit import (
    CommitMessageError,
    Prepared,
    batch_of,
    job_transaction,
    stream_transaction,
)
from rocketq.spark.sink_rows import SinkSchemaError, check_schema
from rocketq.spark.sink_send import abort_prepared, commit_prepared, prepare_partition, send_partition

log = logging.getLogger(__name__)


@dataclass
class Sent(WriterCommitMessage):
    """An at-least-once task's report: every one of its rows was acknowledged."""

    partition: int
    rows: int


def _task() -> TaskContext:
    context = TaskContext.get()
    assert context is not None, "write() runs in a Spark task"
    return context


def _sent_log(what: str, messages: list[WriterCommitMessage | None]) -> None:
    log.info("rocketmq %s: %d rows sent", what, sum(m.rows for m in messages if isinstance(m, Sent)))


class RocketMQBatchWriter(DataSourceArrowWriter):
    """``df.write.format("rocketmq")``: append only (a topic is not overwritten). Exactly once, the job
    is one transaction: its rows become visible when the job commits, atomically per broker."""

    def __init__(self, options: SinkOptions, schema: StructType, overwrite: bool) -> None:
        if overwrite:
            raise SinkSchemaError("a topic cannot be overwritten: write with mode('append')")
        self.options = options
        self.columns = check_schema(schema, options.topic)
        self.job_id = uuid.uuid4().hex  # made on the driver: every task of this write sees the same

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        context = _task()
        partition = context.partitionId()
        prefix = f"{self.job_id}-{partition}-"
        if self.options.exactly_once:
            transaction = job_transaction(self.job_id)
            return prepare_partition(
                self.options, self.columns, iterator, transaction=transaction, partition=partition,
                attempt=context.attemptNumber(), key_prefix=prefix,
            )  # fmt: skip
        return Sent(partition, send_partition(self.options, self.columns, iterator, prefix))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.options.exactly_once:
            commit_prepared(self.options, messages, job_transaction(self.job_id))
        else:
            _sent_log(f"batch write {self.job_id}", messages)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.options.exactly_once:
            rolled_back = abort_prepared(self.options, messages, job_transaction(self.job_id))
            log.warning("rocketmq batch write %s failed; %d half messages rolled back", self.job_id, rolled_back)
        else:
            log.warning("rocketmq batch write %s failed; the rows the finished tasks sent stay sent", self.job_id)


class RocketMQStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("rocketmq")``: each micro-batch at least once, or exactly once as one
    transaction. ``commit`` and ``abort`` run in a new writer per micro-batch, in a Python worker on the
    driver, and know only what the tasks reported."""

    def __init__(self, options: SinkOptions, schema: StructType, overwrite: bool) -> None:
        self.options = options
        self.columns = check_schema(schema, options.topic)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        context = _task()
        query_id = context.getLocalProperty("sql.streaming.queryId") or ""
        batch_id = context.getLocalProperty("streaming.sql.batchId") or ""
        partition = context.partitionId()
        prefix = f"{query_id}-{batch_id}-{partition}-"
        if self.options.exactly_once:
            return prepare_partition(
                self.options, self.columns, iterator, transaction=stream_transaction(query_id, batch_id),
                partition=partition, attempt=context.attemptNumber(), key_prefix=prefix,
            )  # fmt: skip
        return Sent(partition, send_partition(self.options, self.columns, iterator, prefix))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.options.exactly_once:
            _same_batch(messages, batchId)
            commit_prepared(self.options, messages)
        else:
            _sent_log(f"stream write, batch {batchId}", messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.options.exactly_once:
            _same_batch(messages, batchId)
            rolled_back = abort_prepared(self.options, messages)
            log.warning("rocketmq stream write, batch %d failed; %d half messages rolled back", batchId, rolled_back)
        else:
            log.warning("rocketmq stream write, batch %d failed; Spark runs it again (at least once)", batchId)


def _same_batch(messages: list[WriterCommitMessage | None], batch_id: int) -> None:
    for message in messages:
        if isinstance(message, Prepared) and batch_of(message.transaction) != batch_id:
            raise CommitMessageError(f"a task of batch {batch_id} wrote transaction {message.transaction!r}")
