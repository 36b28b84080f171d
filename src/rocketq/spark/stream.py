"""The ``rocketmq`` streaming source: micro-batches of new messages, one task per queue with any.

Spark keeps the offset each micro-batch ends at in the query's checkpoint (``offsets/N``), as
``{"topic": {"broker": {"queueId": next}}}``, and a restarted query goes on from there: the checkpoint
alone says where a query is. The driver side (one long-lived reader per query run) asks the brokers
for their latest offsets before each micro-batch and applies the rate limits; the tasks read their
ranges exactly (``rocketq.spark.read``).

A queue added to a topic while the query runs is read from its first message. A broker that does not
answer, or left the route, keeps its queues where they are until it is back. Messages that are gone
before they were read (aged out, or a queue that shrank) fail the query, or are skipped with a warning
when ``failOnDataLoss`` is false. With ``consumerGroup``, the offsets of each finished micro-batch are
committed to the brokers for that group, for monitoring (``rocketq admin consumerProgress``); they
are never read back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from rocketq.client.message import MessageQueue
from rocketq.client.sync_tools import SyncAdminClient
from rocketq.spark.offsets import Offsets, QueueRange, offsets_json, parse_offsets, plan_ranges, resolve
from rocketq.spark.options import OffsetsJson, SourceOptions
from rocketq.spark.planning import Admission, reconcile, report_data_loss
from rocketq.spark.read import Snapshot, offset_for_timestamp, read_range, snapshot
from rocketq.spark.source import read_settings
from rocketq.spark.worker_heap import after_first_batch

log = logging.getLogger(__name__)


class RocketMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: SourceOptions, clock: Callable[[], float] = time.monotonic) -> None:
        self.options = options
        self.settings = read_settings(options)
        self._clock = clock
        self._admission = Admission(
            max_rows=options.max_offsets_per_trigger,
            min_rows=options.min_offsets_per_trigger,
            max_delay_ms=options.max_trigger_delay_ms,
            last_batch_ms=clock() * 1000,
        )
        self._frozen: Snapshot | None = None  # Trigger.AvailableNow: the data there was when it began
        self._latest: Offsets = {}
        self._admin: SyncAdminClient | None = None
        self._committed: Offsets = {}  # last shown as the consumer group's

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_admin"] = None  # a client does not pickle; the tasks do not need one
        return state

    # -- driver side ----------------------------------------------------------------------------------

    def _snapshot(self) -> Snapshot:
        return snapshot(self.settings.reader(), self.options.topics, tolerate_away_brokers=True)

    def initialOffset(self) -> OffsetsJson:
        """Where a new query starts (a restarted one goes on from its checkpoint instead)."""
        reader = self.settings.reader()
        taken = snapshot(reader, self.options.topics, tolerate_away_brokers=False)

        def by_timestamp(key: Any, timestamp_ms: int) -> int:
            return offset_for_timestamp(reader, key, timestamp_ms)

        return offsets_json(resolve(self.options.starting, "startingOffsets", taken.bounds, by_timestamp))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._frozen = self._snapshot()

    def latestOffset(self, start: OffsetsJson, limit: ReadLimit) -> OffsetsJson:
        """The end of the next micro-batch: ``start`` again when there is nothing to read (or not yet
        enough, under ``minOffsetsPerTrigger``)."""
        taken = self._frozen or self._snapshot()
        begin = parse_offsets(start)
        self._commit_to_group(begin)  # Spark asks for the next batch once the last one is done
        latest = {key: high for key, (_, high) in taken.bounds.items()}
        checked = reconcile(begin, latest, taken.routed, taken.answered)
        for problem in checked.problems:
            report_data_loss(problem, self.options.fail_on_data_loss)
        self._latest = checked.latest
        admission = self._admission
        # the engine's limit rules: ReadAllAvailable (Trigger.Once) reads everything whatever the options
        admission.max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        admission.min_rows = limit.min_rows if isinstance(limit, ReadMinRows) else None
        if not isinstance(limit, ReadAllAvailable):  # a minimum and a maximum at once come from the options
            admission.max_rows = admission.max_rows or self.options.max_offsets_per_trigger
            admission.min_rows = admission.min_rows or self.options.min_offsets_per_trigger
        end = admission.next_end(begin, checked.latest, self._clock() * 1000, wait_allowed=self._frozen is None)
        return offsets_json(end)

    def reportLatestOffset(self) -> OffsetsJson | None:
        return offsets_json(self._latest) if self._latest else None

    def partitions(self, start: OffsetsJson, end: OffsetsJson) -> Sequence[InputPartition]:
        ranges = plan_ranges(parse_offsets(start), parse_offsets(end), self.options.min_partitions)
        return [InputPartition(part) for part in ranges]

    def commit(self, end: OffsetsJson) -> None:
        """Spark finished everything up to ``end``."""
        self._commit_to_group(parse_offsets(end))

    def _commit_to_group(self, done: Offsets) -> None:
        """Show ``done`` as the consumer group's offsets, if a group is set. Spark calls ``commit`` one
        micro-batch late (the last batch of a run only when the query next starts), so the start of
        each ``latestOffset`` call, which Spark asks for only once the batch before it is written, is
        committed too."""
        group = self.options.consumer_group
        if group is None or done == self._committed:
            return
        offsets = {MessageQueue(k.topic, k.broker, k.queue_id): offset for k, offset in done.items()}
        try:
            if self._admin is None:
                self._admin = SyncAdminClient(self.options.name_server, timeout_s=self.options.request_timeout_s)
            self._admin.commit_offsets(group, offsets)
            self._committed = dict(done)
        except Exception as exc:  # monitoring only: the query goes on
            log.warning("committing the offsets of group %s failed: %s", group, exc)

    def stop(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    # -- executor side --------------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        part: QueueRange = partition.value
        return after_first_batch(read_range(self.settings, part))
