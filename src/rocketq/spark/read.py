"""Reading for the ``rocketmq`` source: the brokers' offsets on the driver, queue ranges into Arrow
record batches on the executors. Uses ``rocketq.client`` only, so it reads Apache RocketMQ brokers too.

Spark pickles the readers to its Python workers and reuses those workers across tasks and queries, so
the clients are not kept on the readers (a socket does not pickle) but per worker process, made on
first use (``shared_reader``); a broker that restarted is reconnected to on the next request.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from rocketq.client.columns import records_batch
from rocketq.client.errors import MQClientError
from rocketq.client.message import MessageQueue
from rocketq.client.queue_reader import OffsetOutOfRangeError, QueueChunk
from rocketq.client.selector import MessageSelector
from rocketq.client.sync_tools import SyncQueueReader
from rocketq.remoting import RemotingError
from rocketq.spark.offsets import QueueKey, QueueRange
from rocketq.spark.planning import report_data_loss

log = logging.getLogger(__name__)

BATCH_BYTES = 16 * 1024 * 1024
"""Pulled records gathered into one Arrow batch (about 13,000 messages of 1 KiB, 50,000 of 100 B): Spark
pays a few milliseconds per batch handed over from Python, so fewer, larger batches cost it less per
row; past some tens of MiB a batch costs more again (``rocketq.bench.spark_ceiling``, docs/spark.md)."""

_lock = threading.Lock()
_readers: dict[tuple[str, int, float, int], SyncQueueReader] = {}


def shared_reader(name_server: str, pull_batch_size: int, timeout_s: float, max_pull_bytes: int) -> SyncQueueReader:
    """This process's reader for these settings, made on first use."""
    key = (name_server, pull_batch_size, timeout_s, max_pull_bytes)
    with _lock:
        reader = _readers.get(key)
        if reader is None:
            reader = _readers[key] = SyncQueueReader(
                name_server, pull_batch_size=pull_batch_size, timeout_s=timeout_s, max_pull_bytes=max_pull_bytes
            )
        return reader


@dataclass(frozen=True, slots=True)
class ReadSettings:
    """What a task needs to read its range (pickled into every task)."""

    name_server: str
    selector: MessageSelector
    pull_batch_size: int
    timeout_s: float
    include_properties: bool
    fail_on_data_loss: bool
    max_pull_bytes: int

    def reader(self) -> SyncQueueReader:
        return shared_reader(self.name_server, self.pull_batch_size, self.timeout_s, self.max_pull_bytes)


@dataclass(slots=True)
class Snapshot:
    """The topics' queues and their (min, max) offsets, as the brokers answered now."""

    bounds: dict[QueueKey, tuple[int, int]] = field(default_factory=dict)
    routed: set[tuple[str, str]] = field(default_factory=set)  # (topic, broker) in the routes
    answered: set[tuple[str, str]] = field(default_factory=set)  # ... of which these answered


def snapshot(reader: SyncQueueReader, topics: tuple[str, ...], *, tolerate_away_brokers: bool) -> Snapshot:
    """Every readable queue of ``topics`` with its offsets. A topic the name servers do not know fails,
    and so does a broker that does not answer, unless ``tolerate_away_brokers`` (a running stream: their
    queues wait; a topic drops out of the routes when every broker holding it is away)."""
    taken = Snapshot()
    for topic in topics:
        try:
            by_broker = reader.queues_by_broker(topic)
        except (MQClientError, RemotingError, TimeoutError) as exc:
            if not tolerate_away_brokers:
                raise
            log.warning("the route of %s is not known now: %s", topic, exc)
            continue
        for broker, queues in by_broker.items():
            taken.routed.add((topic, broker))
            try:
                offsets = reader.offsets(queues)
            except (MQClientError, RemotingError, TimeoutError) as exc:
                if not tolerate_away_brokers:
                    raise
                log.warning("offsets of %s on %s are not known now: %s", topic, broker, exc)
                continue
            taken.answered.add((topic, broker))
            for queue, bounds in offsets.items():
                taken.bounds[QueueKey(topic, broker, queue.queue_id)] = bounds
    return taken


def offset_for_timestamp(reader: SyncQueueReader, key: QueueKey, timestamp_ms: int) -> int:
    return reader.offset_for_timestamp(MessageQueue(key.topic, key.broker, key.queue_id), timestamp_ms)


def read_range(settings: ReadSettings, part: QueueRange) -> Iterator[pa.RecordBatch]:
    """The messages of ``part`` as record batches of ``arrow_message_schema``. Messages that are no
    longer kept fail the task, or are skipped with a warning, as ``failOnDataLoss`` says."""
    queue = MessageQueue(part.topic, part.broker, part.queue_id)
    gathered: list[QueueChunk] = []
    size = 0
    chunks = settings.reader().read(
        queue,
        part.start,
        part.end,
        selector=settings.selector,
        skip_lost=not settings.fail_on_data_loss,
        read_ahead_bytes=BATCH_BYTES,  # the next batch is pulled while this one is decoded
    )
    try:
        for chunk in chunks:
            if not chunk.records or (chunk.positions is not None and not chunk.positions):
                continue
            gathered.append(chunk)
            size += len(chunk.records)
            if size >= BATCH_BYTES:
                yield _decode(gathered, part.broker, settings.include_properties)
                gathered, size = [], 0
    except OffsetOutOfRangeError as exc:
        report_data_loss(f"reading {part.key} [{part.start}, {part.end}): {exc}", settings.fail_on_data_loss)
    finally:
        chunks.close()
    if gathered:
        yield _decode(gathered, part.broker, settings.include_properties)


def _decode(chunks: list[QueueChunk], broker: str, include_properties: bool) -> pa.RecordBatch:
    """One batch of the chunks' wanted records, each chunk read where it is (not joined first)."""
    parts = [(chunk.records, chunk.positions) for chunk in chunks]
    return records_batch(parts, broker_name=broker, include_properties=include_properties)
