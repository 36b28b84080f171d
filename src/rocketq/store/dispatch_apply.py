"""Records the dispatcher read, into the ConsumeQueues and the index, and news of them to the arrival
listeners (compiled: a lone message's dispatch runs on the broker's event loop, inline after its put).

``Dispatcher`` (its thread and its walk along the CommitLog stay interpreted: see
``rocketq.native.modules``) calls these once per batch of up to ``BATCH_RECORDS`` records. With an
``ext`` (filter bit maps), both paths first hand the records of filtered topics to it, which gives
them ext units and the addresses their ConsumeQueue entries hold (``rocketq.store.ext_writer``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Final

import numpy as np

from rocketq.common.record import NOT_QUEUED_TRANSACTIONS, SysFlag
from rocketq.store import compiled_dispatch as columns
from rocketq.store.commit_log import ColumnBatch
from rocketq.store.consume_queue import ENTRY_SIZE, ConsumeQueue, Entry
from rocketq.store.ext_writer import ExtWriter
from rocketq.store.index_service import IndexService, are_indexed, is_indexed
from rocketq.store.record_descriptions import RecordDescriptions
from rocketq.store.results import DispatchRequest

log = logging.getLogger(__name__)

ArrivalListener = Callable[[str, int, int, int, DispatchRequest | None], None]
"""(topic, queue_id, max queue offset (exclusive), store timestamp of the newest record, the record when
it is the only one this notice brings: a lone put's pass, else None). A listener may answer from that
record's place (``commit_log_offset``, ``size``, ``queue_offset``, ``tags_code``) instead of reading
the ConsumeQueue; it must not keep or change it."""

BATCH_RECORDS = 4096
"""The most records one dispatch batch takes."""
_NOT_IN_QUEUE = NOT_QUEUED_TRANSACTIONS
_TRANSACTION_MASK: Final = SysFlag.TRANSACTION_MASK  # read per record (see rocketq.native.modules on enum members)
COLUMNAR_MIN_RECORDS = 16
"""Shorter compiled-scan batches are applied record by record: the columnar path's fixed cost (numpy
for the index keys, array set-up) breaks even at about this many records."""
_Record = tuple[
    str, int, int, int, int, int, int
]  # topic, queue id, queue offset, physical offset, size, tags, sys flag


class DispatchApplier:
    def __init__(self, consume_queue_of: Callable[[str, int], ConsumeQueue], index: IndexService | None) -> None:
        self._consume_queue_of = consume_queue_of
        self._index = index
        self.listeners: list[ArrivalListener] = []
        self.dispatched_timestamp = 0  # store time of the newest dispatched record
        self.dispatched_count = 0
        self.ext: ExtWriter | None = None  # filter bit maps (set by MessageStore.set_bit_map_calculator)

    def apply_described(self, descriptions: RecordDescriptions, from_offset: int, end_offset: int) -> tuple[int, int]:
        """``apply`` of the put records described from ``from_offset`` on, ending by ``end_offset``
        (``RecordDescriptions.take``, at most ``BATCH_RECORDS``); returns how many and where the last
        ends (0 and ``from_offset``: the record there is not described, the caller scans it). A lone
        put's record, the only one there, is applied as ``apply`` applies one, without the list
        ``take`` makes."""
        appended = descriptions.appended
        if appended and self.ext is None:
            request = appended[0]
            if request.commit_log_offset == from_offset and from_offset + request.size == end_offset:
                appended.popleft()
                self._apply_one(request)
                return 1, end_offset
        taken = descriptions.take(from_offset, end_offset, BATCH_RECORDS)
        if not taken:
            return 0, from_offset
        self.apply(taken)
        last = taken[-1]
        return len(taken), last.commit_log_offset + last.size

    def apply(self, requests: list[DispatchRequest]) -> None:
        """Write one batch of records into the ConsumeQueues, notify the arrival listeners, then index
        the batch's keys."""
        if self.ext is not None:
            self._extend_requests(self.ext, requests)
        if len(requests) == 1:
            self._apply_one(requests[0])
            return
        arrived = self._put_records(
            (r.topic, r.queue_id, r.queue_offset, r.commit_log_offset, r.size, r.tags_code, r.sys_flag)
            for r in requests
        )
        self.dispatched_timestamp = requests[-1].store_timestamp
        # Listeners (the pulls held for these queues) first: they read the ConsumeQueues, not the
        # index, and a lone message's consumer should not wait for its keys to be hashed.
        self._notify(arrived)
        if self._index is not None:
            self._index.build(requests)
        self.dispatched_count += len(requests)

    def _apply_one(self, request: DispatchRequest) -> None:
        """``apply`` for a lone record (a single put's pass) without the grouping a batch needs: the
        same ConsumeQueue entry, written the same way (``ConsumeQueue.put_one``), the listeners told,
        and its keys indexed later, off the put's turn."""
        self.dispatched_timestamp = request.store_timestamp
        if request.sys_flag & _TRANSACTION_MASK not in _NOT_IN_QUEUE:
            topic, queue_id, queue_offset = request.topic, request.queue_id, request.queue_offset
            self._consume_queue_of(topic, queue_id).put_one(
                queue_offset, request.commit_log_offset, request.size, request.tags_code
            )
            self._tell(topic, queue_id, queue_offset + 1, request)
        if self._index is not None:
            self._index.build((request,), later=True)
        self.dispatched_count += 1

    def _put_records(self, records: Iterable[_Record]) -> dict[tuple[str, int], int]:
        """ConsumeQueue entries for records in log order, each queue's contiguous run in one write;
        returns each queue's new max offset."""
        by_queue: dict[tuple[str, int], tuple[int, list[Entry]]] = {}
        for topic, queue_id, queue_offset, physical, size, tags_code, sys_flag in records:
            if sys_flag & _TRANSACTION_MASK in _NOT_IN_QUEUE:
                continue
            key = (topic, queue_id)
            entry = (physical, size, tags_code)
            batch = by_queue.get(key)
            if batch is None:
                by_queue[key] = (queue_offset, [entry])
            elif batch[0] + len(batch[1]) == queue_offset:
                batch[1].append(entry)
            else:  # not contiguous (rebuilt queue, or records out of order): flush what we have
                self._put(key, *batch)
                by_queue[key] = (queue_offset, [entry])
        for key, (first_offset, entries) in by_queue.items():
            self._put(key, first_offset, entries)
        return {key: first_offset + len(entries) for key, (first_offset, entries) in by_queue.items()}

    @staticmethod
    def _extend_requests(ext: ExtWriter, requests: list[DispatchRequest]) -> None:
        """Ext units for the Python path's records (``ExtWriter.extend``), their addresses written back."""
        bit_maps = ext.topics(requests[0].commit_log_offset)
        picked = [r for r in requests if r.topic in bit_maps] if bit_maps else []
        if picked:
            records = [
                (r.topic, r.queue_id, r.queue_offset, r.commit_log_offset, r.store_timestamp, r.sys_flag)
                for r in picked
            ]
            codes = ext.extend(records, [r.tags_code for r in picked], bit_maps)
            for request, code in zip(picked, codes, strict=True):
                request.tags_code = code

    @staticmethod
    def _extend_rows(ext: ExtWriter, batch: ColumnBatch) -> None:
        """Ext units for the compiled scan's rows (``ExtWriter.extend``), their addresses written back."""
        rows, topics = batch.rows, batch.topics
        bit_maps = ext.topics(int(rows[0, columns.PHYSICAL]))
        wanted = [index for index, name in enumerate(topics) if name in bit_maps] if bit_maps else []
        if not wanted:
            return
        picked = np.flatnonzero(np.isin(rows[:, columns.TOPIC], wanted))
        if len(picked):
            chosen = rows[picked]
            records = [
                (topics[topic], queue_id, queue_offset, physical, stamp, sys_flag)
                for physical, _, queue_id, queue_offset, sys_flag, stamp, topic, _ in chosen.tolist()
            ]
            rows[picked, columns.TAGS_CODE] = ext.extend(records, chosen[:, columns.TAGS_CODE].tolist(), bit_maps)

    def _notify(self, arrived: dict[tuple[str, int], int]) -> None:
        for (topic, queue_id), max_offset in arrived.items():
            self._tell(topic, queue_id, max_offset, None)

    def _tell(self, topic: str, queue_id: int, max_offset: int, record: DispatchRequest | None) -> None:
        """Tell every arrival listener that ``topic``-``queue_id`` now ends at ``max_offset`` (with the
        ``record`` that brought it there when it is the only one; a listener's failure is logged, and
        the others are still told)."""
        for listener in self.listeners:
            try:
                listener(topic, queue_id, max_offset, self.dispatched_timestamp, record)
            except Exception:
                log.exception("arrival listener failed for %s-%d", topic, queue_id)

    def _apply_rows(self, batch: ColumnBatch) -> None:
        """``apply_columns`` for a short batch, record by record (numpy's fixed cost would dominate)."""
        topics = batch.topics
        rows = batch.rows.tolist()
        arrived = self._put_records(
            (topics[topic], queue_id, queue_offset, physical, size, tags_code, sys_flag)
            for physical, size, queue_id, queue_offset, sys_flag, _, topic, tags_code in rows
        )
        self.dispatched_timestamp = rows[-1][columns.STORE_TIMESTAMP]
        self._notify(arrived)
        if self._index is not None and len(batch.key_hashes):
            self._index.build_deferred()  # (before reading where the index ends)
            already = self._index.end_phy_offset
            hashes: list[int] = []
            offsets: list[int] = []
            stamps: list[int] = []
            for key_hash, record in zip(batch.key_hashes.tolist(), batch.key_records.tolist(), strict=True):
                row = rows[record]
                if is_indexed(row[columns.PHYSICAL], row[columns.SYS_FLAG], already):
                    hashes.append(key_hash)
                    offsets.append(row[columns.PHYSICAL])
                    stamps.append(row[columns.STORE_TIMESTAMP])
            self._index.build_hashed(hashes, offsets, stamps)
        self.dispatched_count += len(rows)

    def apply_columns(self, batch: ColumnBatch) -> None:
        """``apply`` for records the compiled scan parsed: each queue's entries grouped and packed by
        compiled code (``group_entries``) and written as one block, the listeners told, the index keys
        (already hashed) indexed; no per-record Python."""
        rows = batch.rows
        if self.ext is not None:
            self._extend_rows(self.ext, batch)
        if len(rows) < COLUMNAR_MIN_RECORDS:
            self._apply_rows(batch)
            return
        group = columns.entry_grouper()
        entries = np.empty(len(rows) * ENTRY_SIZE, dtype=np.uint8)
        runs = np.empty((len(rows), len(columns.RUN)), dtype=np.int64)
        count = group(rows, entries, runs)
        block = entries.tobytes()
        arrived: dict[tuple[str, int], int] = {}
        topics = batch.topics
        for start, end, topic, queue_id, first_offset, end_physical in runs[:count].tolist():
            key = (topics[topic], queue_id)
            self._consume_queue_of(*key).put_block(
                first_offset, block[start * ENTRY_SIZE : end * ENTRY_SIZE], end_physical
            )
            arrived[key] = first_offset + end - start
        self.dispatched_timestamp = int(rows[-1, columns.STORE_TIMESTAMP])
        self._notify(arrived)
        if self._index is not None and len(batch.key_hashes):
            self._index.build_deferred()  # (before reading where the index ends)
            keyed = rows[batch.key_records]  # each key's record (one gather; numpy's cost is per call)
            hashes, physical, stamps = batch.key_hashes, keyed[:, columns.PHYSICAL], keyed[:, columns.STORE_TIMESTAMP]
            keep = are_indexed(physical, keyed[:, columns.SYS_FLAG], self._index.end_phy_offset)
            if not keep.all():  # (the common case keeps every key: new records, no rolled-back half)
                hashes, physical, stamps = hashes[keep], physical[keep], stamps[keep]
            self._index.build_hashed(hashes.tolist(), physical.tolist(), stamps.tolist())
        self.dispatched_count += len(rows)

    def _put(self, key: tuple[str, int], first_offset: int, entries: list[Entry]) -> None:
        self._consume_queue_of(*key).put(first_offset, entries)
