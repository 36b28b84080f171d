"""The CommitLog: every topic's records, appended in arrival order to one MappedFileQueue.

A record never spans two files: when the next record (plus an 8-byte filler) does not fit in what is
left of the current file, the rest of the file becomes a BLANK_MAGIC filler and the record starts the
next file (mirrors ``CommitLog.DefaultAppendMessageCallback``). Queue offsets are assigned here, per
topic/queue, at append time (RocketMQ's ``topicQueueTable``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Final, cast
from zlib import crc32

from rocketq.common import record as rec
from rocketq.common.offsets import PhysicalOffset, QueueOffset
from rocketq.store import compiled_append
from rocketq.store.commit_log_scan import ColumnBatch, LogReads
from rocketq.store.config import StoreConfig
from rocketq.store.mapped_file import DiskFullError, MappedFile
from rocketq.store.results import BatchToStore, MeasuredBatch, MessageToStore, PutMessageResult, PutStatus
from rocketq.store.staging import Segment, Staging, write_and_publish
from rocketq.store.wire_batches import WireBatches

__all__ = ["ColumnBatch", "CommitLog"]  # (ColumnBatch: the compiled scan's records, from commit_log_scan)

_TXN_MASK = rec.SysFlag.TRANSACTION_MASK
_PUT_OK: Final = PutStatus.PUT_OK  # read per put, bound once (see rocketq.native.modules on enum members)
_NO_QUEUE_OFFSET = rec.NOT_QUEUED_TRANSACTIONS
_RECORD_STRUCTS: Final = rec.RECORD_STRUCTS  # (the same dict, bound once)

_Encoded = tuple[MessageToStore, bytes, bytes, int]  # message, topic, properties, record size


class CommitLog(LogReads):
    """Appends records (and reads them: ``LogReads``). The appends must be called with ``put_lock`` held
    (one writer)."""

    def __init__(self, config: StoreConfig) -> None:
        super().__init__(config)
        self.queue_offsets: dict[tuple[str, int], int] = {}
        self.put_lock = threading.Lock()
        self.topic_bytes: dict[str, bytes] = {}  # encoded topic names, checked (1..127 bytes)
        kernels = compiled_append.load() if config.compiled_dispatch else None
        self.wire_batches = WireBatches(self, kernels) if kernels is not None else None
        # SYNC_FLUSH appends are written with pwrite from a staging buffer, not stored through the map,
        # which would cost every fsync a TLB shootdown per page (see ``staging``). ASYNC_FLUSH ones go
        # through the map: their pages are cleaned once per write-behind flush, not once per put, and a
        # pwrite per put (which releases the GIL) cost single puts up to four fifths of their rate.
        self.staged = config.sync_flush
        self.staging = Staging()  # appends hold put_lock: one scratch buffer is enough

    # -- append ---------------------------------------------------------------------------------------

    def encode(self, messages: Sequence[MessageToStore]) -> list[_Encoded] | PutMessageResult:
        """(message, topic bytes, properties bytes, record size) per message, or why the batch is refused."""
        encoded: list[_Encoded] = []
        limit = self.config.max_message_size
        topic_cache = self.topic_bytes
        append = encoded.append
        for message in messages:
            topic = topic_cache.get(message.topic)
            if topic is None:
                topic = message.topic.encode()
                if not 0 < len(topic) <= rec.MAX_TOPIC_LENGTH:
                    return PutMessageResult(
                        status=PutStatus.MESSAGE_ILLEGAL, remark=f"topic length {len(topic)} not in 1..127"
                    )
                topic_cache[message.topic] = topic
            properties = message.properties.encode()
            if len(properties) > rec.MAX_PROPERTIES_LENGTH:
                return PutMessageResult(
                    status=PutStatus.PROPERTIES_SIZE_EXCEEDED,
                    remark=f"properties of {len(properties)} bytes exceed {rec.MAX_PROPERTIES_LENGTH}",
                )
            size = rec.RECORD_OVERHEAD + len(message.body) + len(topic) + len(properties)
            if size > limit:
                return PutMessageResult(
                    status=PutStatus.MESSAGE_ILLEGAL,
                    remark=f"message of {size} bytes exceeds the maximum message size {limit}",
                )
            append((message, topic, properties, size))
        return encoded

    def reserve_files(self, sizes: Iterable[int], total: int) -> MappedFile:
        """Create every file the batch will roll into before writing a byte (DiskFullError leaves
        the log untouched, so a refused batch is refused whole)."""
        mapped = self.files.last_file_for_write()
        remaining = mapped.remaining
        if total + rec.END_FILE_MIN_BLANK_LENGTH <= remaining:
            return mapped
        file_size = self.files.file_size
        files_needed = 0
        for size in sizes:
            if size + rec.END_FILE_MIN_BLANK_LENGTH > remaining:
                files_needed += 1
                remaining = file_size
            remaining -= size
        last = self.files.last_file()
        assert last is not None
        files_needed -= (last.start_offset - mapped.start_offset) // file_size  # made for this put already
        start = last.end_offset
        created: list[MappedFile] = []
        try:
            for _ in range(files_needed):
                created.append(self.files.create_file(start))
                start += file_size
        except DiskFullError:
            # Take back the files made for this batch: an empty file after a file without its filler
            # would become the write target, and recovery would cut the log at the missing filler.
            self.files.drop_last(len(created))
            raise
        return mapped

    def append(self, messages: Sequence[MessageToStore], store_timestamp: int) -> PutMessageResult:
        """Append records; returns offsets. Raises DiskFullError before writing when files can't grow
        (or when a write finds the disk full; nothing is stored then either).

        The general path (``append_one`` takes the common single message first; its caller comes here
        for the rest): one struct pack per record (into the map, or with ``staged`` into
        the staging buffer, then one ``pwrite`` per file the batch reaches), nothing else per message but
        the queue-offset counter and three list appends.
        """
        encoded = self.encode(messages)
        if isinstance(encoded, PutMessageResult):
            return encoded
        total = 0
        for item in encoded:
            total += item[3]
        mapped = self.reserve_files((item[3] for item in encoded), total)
        table = self.queue_offsets
        structs = rec.RECORD_STRUCTS
        physical_offsets: list[int] = []
        queue_offsets: list[int] = []
        sizes: list[int] = []
        staged = self.staged
        position = mapped.wrote_position
        if staged:  # a filler at most per record
            target, at = self.staging.buffer(total + rec.BLANK.size * len(encoded))[1], 0
        else:
            target, at = mapped.buffer, position
        segment = Segment(mapped, position, at, at, position)
        segments = [segment]
        base = mapped.start_offset
        file_size = mapped.file_size
        magic = rec.MESSAGE_MAGIC
        for message, topic, properties, size in encoded:
            if size + rec.END_FILE_MIN_BLANK_LENGTH > file_size - position:
                rec.BLANK.pack_into(target, at, file_size - position, rec.BLANK_MAGIC)
                segment.end, segment.publish = at + rec.BLANK.size, file_size
                following = self.files.find(mapped.end_offset)
                assert following is not None, "files are reserved before writing"
                mapped, position, base = following, 0, following.start_offset
                if staged:
                    at += rec.BLANK.size
                else:
                    target, at = mapped.buffer, 0
                segment = Segment(mapped, 0, at, at, 0)
                segments.append(segment)
            queue_id = message.queue_id
            sys_flag = message.sys_flag
            if sys_flag & _TXN_MASK in _NO_QUEUE_OFFSET:
                queue_offset = 0
            else:
                key = (message.topic, queue_id)
                queue_offset = table.get(key, 0)
                table[key] = queue_offset + 1
            body = message.body
            lengths = (len(body), len(topic), len(properties))
            packer = structs.get(rec.record_struct_key(*lengths)) or rec.record_struct(*lengths)
            physical = base + position
            packer.pack_into(
                target, at, size, magic, crc32(body) & 0x7FFFFFFF, queue_id, message.flag, queue_offset,
                physical, sys_flag, message.born_timestamp, message.born_host, store_timestamp, message.store_host,
                message.reconsume_times, message.prepared_transaction_offset, lengths[0], body, lengths[1], topic,
                lengths[2], properties,
            )  # fmt: skip
            position += size
            at += size
            physical_offsets.append(physical)
            queue_offsets.append(queue_offset)
            sizes.append(size)
        segment.end, segment.publish = at, position
        try:
            write_and_publish(target if staged else None, segments, self.files)  # readers see the batch now
        except BaseException:
            self._take_back_queue_offsets(message for message, _, _, _ in encoded)
            raise
        descriptions = self.descriptions
        if descriptions.room_for(len(encoded)):
            for (message, _, _, size), physical, queue_offset in zip(
                encoded, physical_offsets, queue_offsets, strict=True
            ):
                descriptions.add_put(
                    message.topic, message.queue_id, physical, size, store_timestamp, queue_offset,
                    message.sys_flag, message.properties,
                )  # fmt: skip
        return PutMessageResult(
            status=_PUT_OK,
            physical_offsets=cast(list[PhysicalOffset], physical_offsets),
            queue_offsets=cast(list[QueueOffset], queue_offsets),
            sizes=sizes,
            store_timestamp=store_timestamp,
            wrote_bytes=total,
        )

    def _take_back_queue_offsets(self, messages: Iterable[MessageToStore]) -> None:
        """Undo the queue offsets an append assigned to ``messages`` (it failed before publishing)."""
        table = self.queue_offsets
        for message in messages:
            if message.sys_flag & _TXN_MASK not in _NO_QUEUE_OFFSET:
                table[(message.topic, message.queue_id)] -= 1

    def append_one(
        self,
        topic: str,
        queue_id: int,
        body: bytes,
        properties_text: str,
        flag: int,
        sys_flag: int,
        born_timestamp: int,
        born_host: bytes,
        store_host: bytes,
        reconsume_times: int,
        prepared_transaction_offset: int,
        store_timestamp: int,
    ) -> PutMessageResult | None:
        """``append`` of one message given by its fields (``MessageToStore``'s), in the common case (a
        known topic, a record that fits in the current file, not a transaction half): the record packed
        into the file's memory at once, its description left for the dispatcher. None otherwise (the
        caller appends it through ``append``, which refuses it or rolls to the next file). A message put
        alone (``StorePuts.put_one``) comes here first: this is the path of every such record."""
        topic_bytes = self.topic_bytes.get(topic)
        mapped = self.files.last_file()
        if topic_bytes is None or mapped is None or sys_flag & _TXN_MASK in _NO_QUEUE_OFFSET:
            return None
        position = mapped.wrote_position
        if not position:  # an empty file may have been made ahead of the one being written
            return None
        properties = properties_text.encode()
        body_length = len(body)
        topic_length = len(topic_bytes)
        properties_length = len(properties)
        size = rec.RECORD_OVERHEAD + body_length + topic_length + properties_length
        if size > self.config.max_message_size or size + rec.END_FILE_MIN_BLANK_LENGTH > mapped.file_size - position:
            return None  # the general path refuses it, or rolls to the next file
        if properties_length > rec.MAX_PROPERTIES_LENGTH:
            return None
        table = self.queue_offsets
        key = (topic, queue_id)
        queue_offset = table.get(key, 0)
        table[key] = queue_offset + 1
        packer = _RECORD_STRUCTS.get(rec.record_struct_key(body_length, topic_length, properties_length))
        if packer is None:
            packer = rec.record_struct(body_length, topic_length, properties_length)
        physical = mapped.start_offset + position
        staged = self.staged  # (SYNC_FLUSH: packed apart, then written with pwrite instead of through the map)
        target: bytearray | memoryview = bytearray(size) if staged else mapped.buffer
        packer.pack_into(
            target, 0 if staged else position, size, rec.MESSAGE_MAGIC, crc32(body) & 0x7FFFFFFF, queue_id, flag,
            queue_offset, physical, sys_flag, born_timestamp, born_host, store_timestamp, store_host,
            reconsume_times, prepared_transaction_offset, body_length, body, topic_length, topic_bytes,
            properties_length, properties,
        )  # fmt: skip
        if staged:
            try:
                mapped.write_at(position, target)
            except BaseException:
                table[key] = queue_offset
                raise
        mapped.wrote_position = position + size
        self.descriptions.add_put(
            topic, queue_id, physical, size, store_timestamp, queue_offset, sys_flag, properties_text
        )
        return PutMessageResult(
            status=_PUT_OK,
            physical_offsets=[cast(PhysicalOffset, physical)],
            queue_offsets=[cast(QueueOffset, queue_offset)],
            sizes=[size],
            store_timestamp=store_timestamp,
            wrote_bytes=size,
        )

    def measure_batch(self, batch: BatchToStore, max_body_size: int | None = None) -> MeasuredBatch | None:
        """``WireBatches.measure``; None without the compiled append."""
        return None if self.wire_batches is None else self.wire_batches.measure(batch, max_body_size)

    def append_batch(self, measured: MeasuredBatch, store_timestamp: int) -> PutMessageResult:
        """``WireBatches.append`` (``measured`` came from ``measure_batch``)."""
        assert self.wire_batches is not None, "measure_batch returns None without the compiled append"
        return self.wire_batches.append(measured, store_timestamp)

    def close(self) -> None:
        self.descriptions.clear()
        self.files.close()
