"""The reading half of ``MessageStore``: queues, records, offsets, times and key queries.

``StoreReads`` is the base class of ``rocketq.store.store_puts.StorePuts`` (puts), itself the base of
``rocketq.store.message_store.MessageStore`` (lifecycle, flushing and replication writes); everything
here is thread safe and sees every record the dispatcher has indexed.
"""

from __future__ import annotations

from collections.abc import Collection

from rocketq.common import record as rec
from rocketq.common.offsets import QueueOffset
from rocketq.store.commit_log import CommitLog
from rocketq.store.consume_queue import ConsumeQueue
from rocketq.store.index_service import IndexService
from rocketq.store.key_query import records_by_key
from rocketq.store.message_filter import MessageFilter
from rocketq.store.queue_reader import get_from_queue, read_arrived
from rocketq.store.queue_table import QueueTable
from rocketq.store.results import GetMessageResult, GetStatus


class StoreReads:
    """Reads of a store's CommitLog, ConsumeQueues and index."""

    def __init__(self, commit_log: CommitLog, table: QueueTable, index: IndexService | None) -> None:
        self.commit_log = commit_log
        self.index = index
        self._table = table
        self._queues = table.queues  # (read without a lock)
        self._get_messages = 0  # records returned by get_messages (stats)

    def consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        """The queue for topic/queue_id, created on first use (by a put, or the dispatcher)."""
        queue = self._queues.get((topic, queue_id))
        return queue if queue is not None else self._table.get_or_create(topic, queue_id)

    def find_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self._queues.get((topic, queue_id))

    def queues(self) -> list[ConsumeQueue]:
        return self._table.all()

    def get_messages(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int,
        *,
        tags_codes: Collection[int] | None = None,
        message_filter: MessageFilter | None = None,
        max_bytes: int = 4 * 1024 * 1024,
    ) -> GetMessageResult:
        """Up to ``max_count`` records from ``offset``, as views (no copies). ``tags_codes``: keep only
        records whose ConsumeQueue tag code is in it (None keeps all); ``message_filter`` (instead):
        SQL92 filtering by bit map and properties. Release the result."""
        queue = self._queues.get((topic, queue_id))
        if queue is None:
            return GetMessageResult(
                status=GetStatus.NO_MATCHED_LOGIC_QUEUE,
                next_begin_offset=QueueOffset(0 if offset <= 0 else offset),
                min_offset=QueueOffset(0),
                max_offset=QueueOffset(0),
            )
        result = get_from_queue(self.commit_log, queue, offset, max_count, tags_codes, max_bytes, message_filter)
        self._get_messages += result.message_count
        return result

    def get_arrived(
        self, topic: str, queue_id: int, queue_offset: int, physical_offset: int, size: int
    ) -> tuple[memoryview, int, int] | None:
        """``get_messages`` of a queue's last record, just dispatched (the arrival listeners' ``record``):
        its view (which stays readable without a release) and the queue's min and max offsets, or None
        when the queue is in another state and ``get_messages`` must read (``read_arrived``)."""
        queue = self._queues.get((topic, queue_id))
        if queue is None:
            return None
        found = read_arrived(self.commit_log, queue, queue_offset, physical_offset, size)
        if found is not None:
            self._get_messages += 1
        return found

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        queue = self._queues.get((topic, queue_id))
        return queue.min_offset if queue else 0

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        queue = self._queues.get((topic, queue_id))
        return queue.max_offset if queue else 0

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, queue_offset: int) -> int | None:
        queue = self._queues.get((topic, queue_id))
        entry = queue.entry(queue_offset) if queue else None
        return entry[0] if entry else None

    def _store_time_at(self, commit_offset: int) -> int | None:
        mapped = self.commit_log.pin(commit_offset)
        if mapped is None:
            return None
        try:
            at = commit_offset - mapped.start_offset + rec.STORE_TIMESTAMP_AT
            return int.from_bytes(mapped.buffer[at : at + 8], "big", signed=True)
        finally:
            mapped.release()

    def get_offset_by_timestamp(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """The first queue offset stored at or after ``timestamp_ms`` (max offset when none)."""
        queue = self._queues.get((topic, queue_id))
        return queue.offset_for_timestamp(timestamp_ms, self._store_time_at) if queue else 0

    def get_message_store_timestamp(self, topic: str, queue_id: int, queue_offset: int) -> int | None:
        offset = self.get_commit_log_offset_in_queue(topic, queue_id, queue_offset)
        return None if offset is None else self._store_time_at(offset)

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int | None:
        return self.get_message_store_timestamp(topic, queue_id, self.get_min_offset_in_queue(topic, queue_id))

    def lookup_message(self, commit_log_offset: int) -> rec.StoredRecord | None:
        """The record at a CommitLog offset (from an offset message id), or None."""
        return self.commit_log.read_record(commit_log_offset)

    def query_message(
        self,
        topic: str,
        key: str,
        max_num: int = 32,
        begin_ms: int = 0,
        end_ms: int = 2**62,
        *,
        unique: bool | None = None,
    ) -> list[rec.StoredRecord]:
        """Up to ``max_num`` records of ``topic`` stored in [begin_ms, end_ms] that hold ``key`` (as
        UNIQ_KEY when ``unique``, in KEYS when not, either when None), newest first (``records_by_key``)."""
        if self.index is None:
            return []
        return records_by_key(self.index, self.commit_log, topic, key, max_num, begin_ms, end_ms, unique)

    def read_commit_log(self, offset: int, max_bytes: int) -> bytes:
        """A copy of up to ``max_bytes`` of CommitLog from ``offset``, never past the end of the file
        holding it nor past what is written (b"" when nothing is there): what a master streams to its
        slaves (``rocketq.replication``). Thread safe."""
        mapped = self.commit_log.pin(offset)
        if mapped is None:
            return b""
        try:
            position = offset - mapped.start_offset
            return bytes(mapped.buffer[position : min(mapped.wrote_position, position + max_bytes)])
        finally:
            mapped.release()
