"""The ``rocketmq`` sink: ``df.write`` and ``df.writeStream`` into topics (columns: ``sink_rows``).

Delivery is at least once: a task sends its rows in batches, one batch per queue at a time, several in
flight, and returns only when the broker acknowledged every one (a failed send fails the task, and
Spark runs it again). What a retried task or a replayed micro-batch sends again carries the same
unique key (``UNIQ_KEY``, the row's ``msgId``): ``<queryId>-<batchId>-<partition>-<seq>`` for a stream,
``<jobId>-<partition>-<seq>`` for a batch write.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
import uuid
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from rocketq.client.config import ClientConfig, ProducerConfig
from rocketq.client.errors import MQClientError
from rocketq.client.message import Message, MessageQueue
from rocketq.client.producer import Producer
from rocketq.client.sync import LoopThread
from rocketq.spark.options import SinkOptions
from rocketq.spark.sink_rows import SinkSchemaError, Target, check_schema, row_messages

log = logging.getLogger(__name__)

MAX_IN_FLIGHT = 4
"""Arrow batches of one task being sent at once (each as several send requests)."""
SEND_BATCH_BYTES = 1024 * 1024
"""A send request carries at most this many body bytes (and ``sendBatchSize`` messages)."""
EXACTLY_ONCE_MISSING = (
    "deliveryGuarantee=exactlyOnce is not available in this version of rocketq: it needs the brokers'"
    " grouped transactions. Use atLeastOnce (the default) and drop duplicates by msgId when reading"
)


@dataclass
class Sent(WriterCommitMessage):
    """A task's report: every one of its rows was acknowledged."""

    partition: int
    rows: int


class Sender:
    """A started producer on a loop thread of its own, shared by the tasks of a Python worker."""

    def __init__(self, options: SinkOptions) -> None:
        config = ProducerConfig(
            group=options.producer_group,
            client=ClientConfig(namesrv_addr=options.name_server, instance_name=f"spark-{uuid.uuid4().hex[:8]}"),
            send_msg_timeout_s=options.request_timeout_s,
        )
        self._batch_size = options.send_batch_size
        self._timeout_s = options.request_timeout_s
        self._loop = LoopThread(name="rocketq-spark-sink")
        try:
            self._producer = self._loop.call(_started(config))
        except BaseException:
            self._loop.stop()
            raise
        self._queues: dict[str, list[MessageQueue]] = {}

    def submit(self, groups: Sequence[tuple[Target, list[Message]]]) -> Future[int]:
        """Start sending; the future holds how many messages the brokers acknowledged."""
        return self._loop.submit(self._send(groups))

    async def _send(self, groups: Sequence[tuple[Target, list[Message]]]) -> int:
        sends = []
        for target, messages in groups:
            queue = await self._queue(target)
            for chunk in _chunks(messages, self._batch_size):
                sends.append(self._producer.send_batch(chunk, queue=queue, timeout=self._timeout_s))
        await asyncio.gather(*sends)
        return sum(len(messages) for _, messages in groups)

    async def _queue(self, target: Target) -> MessageQueue | None:
        """The queue a row named (queueId, and brokerName when the topic is on several brokers)."""
        if target.queue_id is None:
            return None
        queues = self._queues.get(target.topic)
        if queues is None:
            queues = self._queues[target.topic] = await self._producer.fetch_publish_queues(target.topic)
        brokers = sorted({q.broker_name for q in queues})
        broker = target.broker
        if broker is None:
            if len(brokers) != 1:
                raise SinkSchemaError(
                    f"queueId {target.queue_id} is ambiguous: topic {target.topic!r} has queues on {brokers};"
                    " add a brokerName column"
                )
            broker = brokers[0]
        queue = MessageQueue(target.topic, broker, target.queue_id)
        if queue not in queues:
            raise SinkSchemaError(
                f"{queue} is not a writable queue of {target.topic!r} (those are {[str(q) for q in queues]})"
            )
        return queue


async def _started(config: ProducerConfig) -> Producer:
    return await Producer(config).start()


def _chunks(messages: list[Message], count: int) -> Iterator[list[Message]]:
    chunk: list[Message] = []
    size = 0
    for message in messages:
        if chunk and (len(chunk) >= count or size + len(message.body) > SEND_BATCH_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(message)
        size += len(message.body)
    if chunk:
        yield chunk


_lock = threading.Lock()
_senders: dict[SinkOptions, Sender] = {}


def shared_sender(options: SinkOptions) -> Sender:
    """This worker process's sender for these options, made on first use."""
    with _lock:
        sender = _senders.get(options)
        if sender is None:
            sender = _senders[options] = Sender(options)
        return sender


def send_partition(
    options: SinkOptions, columns: dict[str, str], batches: Iterable[pa.RecordBatch], key_prefix: str
) -> int:
    """Send every row of ``batches``; returns once all are acknowledged (the rows' count)."""
    sender = shared_sender(options)
    pending: collections.deque[Future[int]] = collections.deque()
    rows = 0
    try:
        for batch in batches:
            groups = row_messages(batch, columns, options.topic, key_prefix, rows)
            rows += batch.num_rows
            pending.append(sender.submit(list(groups.items())))
            while len(pending) > MAX_IN_FLIGHT:
                pending.popleft().result()
        while pending:
            pending.popleft().result()
    except MQClientError as exc:
        raise MQClientError(f"the rocketmq sink could not send: {exc}") from exc
    return rows


class RocketMQBatchWriter(DataSourceArrowWriter):
    """``df.write.format("rocketmq")``: append only (a topic is not overwritten)."""

    def __init__(self, options: SinkOptions, schema: StructType, overwrite: bool) -> None:
        if overwrite:
            raise SinkSchemaError("a topic cannot be overwritten: write with mode('append')")
        if options.exactly_once:
            raise SinkSchemaError("deliveryGuarantee=exactlyOnce applies to streaming writes (writeStream) only")
        self.options = options
        self.columns = check_schema(schema, options.topic)
        self.job_id = uuid.uuid4().hex  # made on the driver: every task of this write sees the same

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Sent:
        context = TaskContext.get()
        assert context is not None, "write() runs in a Spark task"
        partition = context.partitionId()
        rows = send_partition(self.options, self.columns, iterator, f"{self.job_id}-{partition}-")
        return Sent(partition, rows)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info(
            "rocketmq batch write %s: %d rows sent", self.job_id, sum(m.rows for m in messages if isinstance(m, Sent))
        )

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning("rocketmq batch write %s failed; the rows the finished tasks sent stay sent", self.job_id)


class RocketMQStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("rocketmq")``, at least once."""

    def __init__(self, options: SinkOptions, schema: StructType, overwrite: bool) -> None:
        if options.exactly_once:
            raise SinkSchemaError(EXACTLY_ONCE_MISSING)
        self.options = options
        self.columns = check_schema(schema, options.topic)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Sent:
        context = TaskContext.get()
        assert context is not None, "write() runs in a Spark task"
        query_id = context.getLocalProperty("sql.streaming.queryId")
        batch_id = context.getLocalProperty("streaming.sql.batchId")
        partition = context.partitionId()
        rows = send_partition(self.options, self.columns, iterator, f"{query_id}-{batch_id}-{partition}-")
        return Sent(partition, rows)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.info(
            "rocketmq stream write, batch %d: %d rows sent",
            batchId,
            sum(m.rows for m in messages if isinstance(m, Sent)),
        )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning("rocketmq stream write, batch %d failed; Spark runs it again (at least once)", batchId)
