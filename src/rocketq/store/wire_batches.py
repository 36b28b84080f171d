"""The CommitLog's appends of producers' wire batches: a SEND_BATCH_MESSAGE body checked and written
by the compiled kernels of ``compiled_append``, with file rolls, queue offsets and results here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from rocketq.common import record as rec
from rocketq.common.offsets import PhysicalOffset, QueueOffset
from rocketq.store import compiled_append
from rocketq.store.results import BatchToStore, MeasuredBatch, MessageToStore, PutMessageResult, PutStatus
from rocketq.store.staging import Segment, write_and_publish

if TYPE_CHECKING:
    from rocketq.store.commit_log import CommitLog

_TXN_MASK = rec.SysFlag.TRANSACTION_MASK


def _read_only(data: bytes) -> np.ndarray:
    """``data`` as the read-only uint8 array the kernels were compiled for (a writable buffer would make
    numba compile another version, seconds long, in the middle of a put)."""
    return np.frombuffer(data if type(data) is bytes else bytes(data), dtype=np.uint8)


class WireBatches:
    """``measure`` is pure (any thread); ``append`` runs under the CommitLog's put lock."""

    def __init__(self, commit_log: CommitLog, kernels: tuple[Any, Any]) -> None:
        self._log = commit_log
        self._measure, self._write = kernels
        self._special_names = compiled_append.special_names()

    def measure(self, batch: BatchToStore, max_body_size: int | None = None) -> MeasuredBatch | None:
        """The record sizes of a wire batch for ``append``, or None when it must be decoded into
        ``MessageToStore`` and appended by ``CommitLog.append`` (an empty or transactional batch, or an
        item that path treats specially or refuses: ``compiled_append.measure_batch``)."""
        commit_log = self._log
        topic = commit_log.topic_bytes.get(batch.topic) or batch.topic.encode()
        if not batch.items or not 0 < len(topic) <= rec.MAX_TOPIC_LENGTH or not batch.properties_suffix.isascii():
            return None
        if batch.sys_flag & _TXN_MASK in rec.NOT_QUEUED_TRANSACTIONS:
            return None
        commit_log.topic_bytes.setdefault(batch.topic, topic)
        items = _read_only(batch.items)
        sizes = np.empty(len(items) // compiled_append.ITEM_OVERHEAD + 1, dtype=np.int64)
        limit = commit_log.config.max_message_size
        names, name_lengths = self._special_names
        suffix_length = len(batch.properties_suffix)  # ASCII: the broker's own properties
        max_body = limit if max_body_size is None else max_body_size
        count, wait, total, largest = self._measure(
            items, len(topic), suffix_length, max_body, limit, names, name_lengths, sizes
        )
        if count <= 0 or largest + rec.END_FILE_MIN_BLANK_LENGTH > commit_log.files.file_size:
            return None  # a record larger than a file goes to ``CommitLog.append``, which refuses it
        return MeasuredBatch(batch, sizes[:count], total, wait)

    def append(self, measured: MeasuredBatch, store_timestamp: int) -> PutMessageResult:
        """``CommitLog.append`` for a measured wire batch: the same records, written by compiled code.
        Raises DiskFullError before writing when files can't grow."""
        commit_log = self._log
        batch = measured.batch
        sizes = measured.sizes
        count = len(sizes)
        mapped = commit_log.reserve_files(sizes.tolist(), measured.total)
        key = (batch.topic, batch.queue_id)
        first_queue_offset = commit_log.queue_offsets.get(key, 0)
        items = _read_only(batch.items)
        topic = _read_only(commit_log.topic_bytes[batch.topic])
        suffix = _read_only(batch.properties_suffix.encode())
        born_host, store_host = _read_only(batch.born_host), _read_only(batch.store_host)
        physical = np.empty(count, dtype=np.int64)
        staged = commit_log.staged
        # staged: a filler per record at most (not staged: nothing is written to the staging buffer)
        stage, view = commit_log.staging.buffer(measured.total + rec.BLANK.size * count if staged else 0)
        segments: list[Segment] = []
        done = item_at = at = 0
        while True:
            start = mapped.wrote_position if not segments else 0
            if staged:  # as long as what is left of the file when the rest of the batch does not fit in it
                room = min(mapped.file_size - start, int(sizes[done:].sum()) + rec.END_FILE_MIN_BLANK_LENGTH)
                out, out_at, base = stage[at : at + room], 0, mapped.start_offset + start
            else:
                out, out_at, base = np.frombuffer(mapped.buffer, dtype=np.uint8), start, mapped.start_offset
            try:
                done, item_at, out_end = self._write(
                    items, item_at, done, count, sizes, out, out_at, base, topic, suffix, batch.queue_id,
                    first_queue_offset, batch.sys_flag, batch.born_timestamp, born_host, store_timestamp, store_host,
                    batch.reconsume_times, batch.prepared_transaction_offset, physical,
                )  # fmt: skip
            finally:
                del out  # a view of the map must not outlive this step (the file could not be closed)
            written = out_end - out_at
            if done == count:
                segments.append(Segment(mapped, start, at, at + written, start + written))
                break
            filler = mapped.file_size - start - written
            if staged:
                rec.BLANK.pack_into(view, at + written, filler, rec.BLANK_MAGIC)
            else:
                rec.BLANK.pack_into(mapped.buffer, start + written, filler, rec.BLANK_MAGIC)
            segments.append(Segment(mapped, start, at, at + written + rec.BLANK.size, mapped.file_size))
            at = at + written + rec.BLANK.size if staged else 0
            following = commit_log.files.find(mapped.end_offset)
            assert following is not None, "files are reserved before writing"
            mapped = following
        write_and_publish(view if staged else None, segments, commit_log.files)  # readers see the batch now
        commit_log.queue_offsets[key] = first_queue_offset + count
        return PutMessageResult(
            status=PutStatus.PUT_OK,
            physical_offsets=cast(list[PhysicalOffset], physical.tolist()),
            queue_offsets=cast(list[QueueOffset], list(range(first_queue_offset, first_queue_offset + count))),
            sizes=sizes.tolist(),
            store_timestamp=store_timestamp,
            wrote_bytes=measured.total,
        )

    def append_together(
        self, messages: Sequence[MessageToStore], batches: Sequence[MeasuredBatch], store_timestamp: int
    ) -> PutMessageResult:
        """``messages`` (``CommitLog.append``), then each measured batch, as one put: the files all of it
        needs are made first, so a put the disk has no room for is refused whole (DiskFullError)."""
        commit_log = self._log
        encoded = commit_log.encode(messages)
        if isinstance(encoded, PutMessageResult):
            return encoded
        sizes = [size for _, _, _, size in encoded] + [size for measured in batches for size in measured.sizes.tolist()]
        commit_log.reserve_files(sizes, sum(sizes))
        parts = [commit_log.append(messages, store_timestamp)] if messages else []
        if parts and not parts[0].ok:
            return parts[0]
        parts.extend(self.append(measured, store_timestamp) for measured in batches)
        return PutMessageResult(
            status=PutStatus.PUT_OK,
            physical_offsets=[offset for part in parts for offset in part.physical_offsets],
            queue_offsets=[offset for part in parts for offset in part.queue_offsets],
            sizes=[size for part in parts for size in part.sizes],
            store_timestamp=store_timestamp,
            wrote_bytes=sum(part.wrote_bytes for part in parts),
        )
