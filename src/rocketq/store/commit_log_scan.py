"""The reading half of the CommitLog: records read back by offset, and the dispatcher's scans of the
log (``LogReads``, the base class of ``rocketq.store.commit_log.CommitLog``, which adds the appends).

A record never spans two files (a BLANK_MAGIC filler ends a file); the scans follow the fillers into
the next file and stop at the write position (a slave's log may end inside a record until its master
sends the rest).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from rocketq.common import record as rec
from rocketq.store import compiled_dispatch
from rocketq.store.config import StoreConfig
from rocketq.store.mapped_file import MappedFile
from rocketq.store.mapped_file_queue import MappedFileQueue
from rocketq.store.record_descriptions import RecordDescriptions
from rocketq.store.results import DispatchRequest

log = logging.getLogger(__name__)

_BLANK_FIRST_BYTE = (rec.BLANK_MAGIC & 0xFFFFFFFF) >> 24

_DISPATCH_FIELDS = rec.head_reader(  # the record header fields the dispatcher needs
    "total_size",
    "magic_code",
    "queue_id",
    "queue_offset",
    "physical_offset",
    "sys_flag",
    "store_timestamp",
    "body_length",
)


@dataclass(frozen=True, slots=True)
class ColumnBatch:
    """Records parsed by the compiled scan: ``rows`` (``compiled_dispatch.ROW`` columns, topics as indexes
    into ``topics``) and the index keys' hashes with the row number of their record."""

    rows: np.ndarray
    key_hashes: np.ndarray
    key_records: np.ndarray
    topics: list[str]


class LogReads:
    """The CommitLog's files, its records read back, and the dispatcher's scans of them."""

    def __init__(self, config: StoreConfig) -> None:
        self.config = config
        self.files = MappedFileQueue(config.commit_log_dir, config.mapped_file_size_commit_log)
        self._topic_text: dict[bytes, str] = {}  # the dispatcher's topic names by their bytes
        self._compiled_scan = compiled_dispatch.load() if config.compiled_dispatch else None
        self._topic_table = compiled_dispatch.TopicTable()
        self.descriptions = RecordDescriptions(config.delay_levels_ms())
        """The records the appends wrote, as the dispatcher needs them (``descriptions.take``): what the
        put knows already is not read back and parsed again. The put and the scan describe each record
        with the same ``descriptions.describe``."""

    # -- read -----------------------------------------------------------------------------------------

    @property
    def min_offset(self) -> int:
        return self.files.min_offset

    @property
    def max_offset(self) -> int:
        return self.files.max_offset

    def pin(self, offset: int) -> MappedFile | None:
        """The file holding ``offset``, held for reading (the caller releases it), or None."""
        mapped = self.files.find(offset)
        if mapped is None or not mapped.hold():
            return None
        return mapped

    def read_record(self, offset: int) -> rec.StoredRecord | None:
        """Decode the record at ``offset`` (a copy), or None when there is no valid record there."""
        mapped = self.pin(offset)
        if mapped is None:
            return None
        try:
            position = offset - mapped.start_offset
            if position >= mapped.wrote_position:
                return None
            try:
                rec.check_record(mapped.buffer, position, mapped.wrote_position, check_crc=True)
            except rec.RecordFormatError:
                return None
            return rec.decode_record(mapped.buffer, position)
        finally:
            mapped.release()

    # -- dispatch scanning ----------------------------------------------------------------------------

    @property
    def has_columnar_scan(self) -> bool:
        return self._compiled_scan is not None

    def scan_columns(self, from_offset: int, max_records: int) -> tuple[ColumnBatch | None, int]:
        """Up to ``max_records`` records from ``from_offset`` through the compiled scan, as columns
        (``compiled_dispatch``), and the offset after them. None (and ``from_offset``) when there is
        no compiled scan or the record at ``from_offset`` is one for ``scan``."""
        columns = self._compiled_scan
        if columns is None:
            return None, from_offset
        mapped = self.pin(from_offset)
        if mapped is None:
            return None, from_offset
        data = np.frombuffer(mapped.buffer, dtype=np.uint8)
        try:
            position = from_offset - mapped.start_offset
            end = mapped.wrote_position
            table = self._topic_table
            max_records = min(max_records, (end - position) // rec.HEAD_SIZE + 1)  # records are longer than a head
            rows = np.empty((max_records, len(compiled_dispatch.ROW)), dtype=np.int64)
            key_space = max_records * 2 + compiled_dispatch.MAX_KEYS_PER_RECORD
            key_hashes = np.empty(key_space, dtype=np.int64)
            key_records = np.empty(key_space, dtype=np.int64)
            count = keys = 0
            while True:
                found, position, found_keys, reason = columns(
                    data, position, end, max_records - count, table.bytes, table.lengths, len(table.names),
                    rows[count:], key_hashes[keys:], key_records[keys:], count,
                )  # fmt: skip
                count += found
                keys += found_keys
                if reason != compiled_dispatch.NEW_TOPIC:
                    break
                body_length = _DISPATCH_FIELDS.unpack_from(mapped.buffer, position)[-1]
                topic_at = position + rec.HEAD_SIZE + body_length
                table.add(bytes(mapped.buffer[topic_at + 1 : topic_at + 1 + mapped.buffer[topic_at]]))
            if not count:
                return None, from_offset
            batch = ColumnBatch(rows[:count], key_hashes[:keys], key_records[:keys], table.names)
            return batch, mapped.start_offset + position
        finally:
            del data
            mapped.release()

    def scan(self, from_offset: int, max_records: int) -> tuple[list[DispatchRequest], int]:
        """Parse up to ``max_records`` records from ``from_offset``; return them and the next offset.

        Stops at the write position. Fillers move the scan to the next file.
        """
        requests: list[DispatchRequest] = []
        offset = from_offset
        while len(requests) < max_records:
            mapped = self.pin(offset)
            if mapped is None:
                last = self.files.last_file()
                if last is not None and offset < last.start_offset:
                    first = self.files.first_file()
                    # Behind the oldest file (deleted): jump ahead to the oldest data.
                    if first is not None and offset < first.start_offset:
                        offset = first.start_offset
                        continue
                return requests, offset
            try:
                offset = self._scan_file(mapped, offset, max_records, requests)
            finally:
                mapped.release()
            if offset - mapped.start_offset < mapped.file_size:
                return requests, offset
        return requests, offset

    def _scan_file(self, mapped: MappedFile, offset: int, max_records: int, out: list[DispatchRequest]) -> int:
        """Parse records into ``out``, one small unpack and one copy per record (the dispatcher's path for
        short batches and for the records the compiled scan leaves)."""
        buffer = mapped.buffer
        position = offset - mapped.start_offset
        end = mapped.wrote_position
        base = mapped.start_offset
        unpack = _DISPATCH_FIELDS.unpack_from
        file_size = mapped.file_size
        topics = self._topic_text
        append = out.append
        while position < end and len(out) < max_records:
            # A slave's log may end inside a record until its master sends the rest: stop before it.
            if end - position < rec.SIZE_AND_MAGIC.size:
                return base + position
            if file_size - position < rec.HEAD_SIZE or buffer[position + 4] == _BLANK_FIRST_BYTE:
                _, magic = rec.SIZE_AND_MAGIC.unpack_from(buffer, position)
                if magic == rec.BLANK_MAGIC:
                    return mapped.end_offset
            if end - position < rec.HEAD_SIZE:
                return base + position
            total, magic, queue_id, queue_offset, physical, sys_flag, store_timestamp, body_length = unpack(
                buffer, position
            )
            if magic != rec.MESSAGE_MAGIC or total <= 0:
                log.error("%s: unexpected bytes at %d while dispatching", mapped.path, base + position)
                return base + position
            if position + total > end:
                return base + position
            topic_at = position + rec.HEAD_SIZE + body_length
            tail = bytes(buffer[topic_at : position + total])  # topic length, topic, properties: one copy
            topic_end = 1 + tail[0]
            raw_topic = tail[1:topic_end]
            topic = topics.get(raw_topic)
            if topic is None:
                topic = topics[raw_topic] = raw_topic.decode()
            append(
                self.descriptions.describe(
                    topic,
                    queue_id,
                    physical,
                    total,
                    store_timestamp,
                    queue_offset,
                    sys_flag,
                    tail[topic_end + 2 :].decode(),
                )
            )
            position += total
        return base + position

    def records(self, from_offset: int) -> Iterator[tuple[int, rec.StoredRecord]]:
        """Every record from ``from_offset`` to the end, decoded (for tools and tests)."""
        offset = from_offset
        while True:
            batch, next_offset = self.scan(offset, 1024)
            for request in batch:
                record = self.read_record(request.commit_log_offset)
                if record is not None:
                    yield request.commit_log_offset, record
            if next_offset == offset:
                return
            offset = next_offset
