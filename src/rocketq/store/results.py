"""What goes into the store and what comes out: message input, put/get results and statuses."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Final, cast

import numpy as np

from rocketq.common.offsets import PhysicalOffset, QueueOffset

NO_HOST = bytes(8)


@dataclass(slots=True, init=False)
class MessageToStore:
    """A message as the broker hands it to the store (RocketMQ's MessageExtBrokerInner).

    ``properties`` is the encoded properties string (docs/store-format.md#properties); the store parses TAGS, KEYS,
    UNIQ_KEY and DELAY out of it when it dispatches. Hosts are 8 packed bytes (IPv4 + int32 port).
    """

    topic: str
    queue_id: int
    body: bytes
    properties: str
    flag: int
    sys_flag: int
    born_timestamp: int
    born_host: bytes
    store_host: bytes
    reconsume_times: int
    prepared_transaction_offset: int

    def __init__(  # written out: see rocketq.native.modules
        self,
        *,
        topic: str,
        queue_id: int,
        body: bytes,
        properties: str = "",
        flag: int = 0,
        sys_flag: int = 0,
        born_timestamp: int = 0,
        born_host: bytes = NO_HOST,
        store_host: bytes = NO_HOST,
        reconsume_times: int = 0,
        prepared_transaction_offset: int = 0,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.body = body
        self.properties = properties
        self.flag = flag
        self.sys_flag = sys_flag
        self.born_timestamp = born_timestamp
        self.born_host = born_host
        self.store_host = store_host
        self.reconsume_times = reconsume_times
        self.prepared_transaction_offset = prepared_transaction_offset


@dataclass(slots=True, kw_only=True)
class BatchToStore:
    """A producer's batch as it came off the wire: ``items`` is a SEND_BATCH_MESSAGE body
    (``rocketq.protocol.batch``). Every item becomes a record of ``topic``/``queue_id`` with the item's
    body and flag, and its properties followed by ``properties_suffix`` (what the broker adds), as if
    each were a ``MessageToStore`` with the other fields below; the store writes them without decoding
    the items into Python objects (``MessageStore.measure_batch``)."""

    topic: str
    queue_id: int
    items: bytes
    properties_suffix: str
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: bytes = NO_HOST
    store_host: bytes = NO_HOST
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0  # a committed transactional batch's half message


@dataclass(frozen=True, slots=True)
class MeasuredBatch:
    """A ``BatchToStore`` the compiled append can write: each item's record size, their sum, and
    whether any item asks to wait for the flush (its ``WAIT`` property)."""

    batch: BatchToStore
    sizes: np.ndarray  # int64, one per item
    total: int
    wait_for_flush: bool


class PutStatus(enum.Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"  # appended, but its fsync did not finish in time
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"  # appended, but no slave acknowledged it in time (SYNC_MASTER)
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"  # appended, but no slave is connected to copy it (SYNC_MASTER)
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"  # too large, or topic/properties too long
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    DISK_FULL = "DISK_FULL"  # refused: the disk is over disk_full_ratio or a new file cannot be allocated
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"  # store closed or shutting down
    OS_PAGE_CACHE_BUSY = "OS_PAGE_CACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


_PUT_OK: Final = PutStatus.PUT_OK  # read per put, bound once (see rocketq.native.modules on enum members)


@dataclass(slots=True, init=False)
class PutMessageResult:
    """Outcome of a put. For a batch, the lists hold one entry per message, in order. With SYNC_FLUSH,
    wait for its fsync with ``MessageStore.wait_flushed`` or ``MessageStore.flushed_on_loop``."""

    status: PutStatus
    physical_offsets: list[PhysicalOffset]
    queue_offsets: list[QueueOffset]
    sizes: list[int]
    store_timestamp: int
    wrote_bytes: int
    remark: str

    def __init__(  # written out: see rocketq.native.modules
        self,
        *,
        status: PutStatus,
        physical_offsets: list[PhysicalOffset] | None = None,
        queue_offsets: list[QueueOffset] | None = None,
        sizes: list[int] | None = None,
        store_timestamp: int = 0,
        wrote_bytes: int = 0,
        remark: str = "",
    ) -> None:
        self.status = status
        self.physical_offsets = [] if physical_offsets is None else physical_offsets
        self.queue_offsets = [] if queue_offsets is None else queue_offsets
        self.sizes = [] if sizes is None else sizes
        self.store_timestamp = store_timestamp
        self.wrote_bytes = wrote_bytes
        self.remark = remark

    @property
    def ok(self) -> bool:
        return self.status is _PUT_OK

    @property
    def end_offset(self) -> int:
        """The CommitLog offset just past this put's last record."""
        return self.physical_offsets[-1] + self.sizes[-1] if self.physical_offsets else 0


class GetStatus(enum.Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"  # entries exist but none passed the filter
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"  # CommitLog file already deleted
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"  # offset > max offset
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"  # offset == max offset: nothing new yet
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"  # offset < min offset
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"  # no such topic/queue
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"  # queue exists, empty


@dataclass(slots=True, init=False)
class GetMessageResult:
    """Records read from one queue, as zero-copy views into the CommitLog's mapped files.

    ``buffers`` are ``memoryview`` slices; adjacent records are merged into one view, so
    ``len(buffers) <= message_count``. The result pins their files: call ``release()`` (or use the
    result as a context manager) once done with the views, so the store may delete or unmap those
    files. A reader that writes the views out after that takes them first (``take_buffers``).
    ``next_begin_offset`` is where the next read of this queue starts.
    """

    status: GetStatus
    next_begin_offset: QueueOffset
    min_offset: QueueOffset
    max_offset: QueueOffset
    buffers: list[memoryview]
    message_count: int
    total_bytes: int
    queue_offsets: list[QueueOffset]
    physical_offsets: list[PhysicalOffset]
    _releases: list[object] = field(repr=False)

    def __init__(  # written out: see rocketq.native.modules
        self,
        *,
        status: GetStatus,
        next_begin_offset: QueueOffset,
        min_offset: QueueOffset,
        max_offset: QueueOffset,
        buffers: list[memoryview] | None = None,
        message_count: int = 0,
        total_bytes: int = 0,
        queue_offsets: list[QueueOffset] | None = None,
        physical_offsets: list[PhysicalOffset] | None = None,
    ) -> None:
        self.status = status
        self.next_begin_offset = next_begin_offset
        self.min_offset = min_offset
        self.max_offset = max_offset
        self.buffers = [] if buffers is None else buffers
        self.message_count = message_count
        self.total_bytes = total_bytes
        self.queue_offsets = [] if queue_offsets is None else queue_offsets
        self.physical_offsets = [] if physical_offsets is None else physical_offsets
        self._releases = []

    def release(self) -> None:
        """Drop the views and unpin the mapped files they came from. Safe to call twice."""
        for view in self.buffers:
            view.release()
        self.buffers.clear()
        for holder in self._releases:
            holder.release()  # type: ignore[attr-defined]
        self._releases.clear()

    def settle(
        self,
        queue_offsets: list[int],
        physical_offsets: list[int],
        total_bytes: int,
        next_begin_offset: int,
        *,
        removed: bool,
        found_any_entry: bool,
    ) -> None:
        """Record what a read found (its views already added) and the status that follows: FOUND when it
        found messages, else MESSAGE_WAS_REMOVING when their files were being deleted, OFFSET_FOUND_NULL
        when it met no entry at all (the status set before stays otherwise)."""
        self.queue_offsets.extend(cast(list[QueueOffset], queue_offsets))
        self.physical_offsets.extend(cast(list[PhysicalOffset], physical_offsets))
        self.message_count = len(queue_offsets)
        self.total_bytes = total_bytes
        self.next_begin_offset = QueueOffset(next_begin_offset)
        if queue_offsets:
            self.status = GetStatus.FOUND
        elif removed:
            self.status = GetStatus.MESSAGE_WAS_REMOVING
        elif not found_any_entry:
            self.status = GetStatus.OFFSET_FOUND_NULL

    def take_buffers(self) -> list[memoryview]:
        """Hand the views over to the caller: ``release()`` then unpins the files but leaves these views
        usable. A view keeps its part of the mapped file readable for as long as it lives, even past the
        file's deletion or the store's close (``MappedFile.close``): the broker writes a pull answer's
        records this way, from the map to the socket, however long the peer takes to read them."""
        taken = self.buffers
        self.buffers = []
        return taken

    def tobytes(self) -> bytes:
        """All records concatenated (a copy)."""
        return b"".join(self.buffers)

    def __enter__(self) -> GetMessageResult:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreStats:
    commit_log_min_offset: int
    commit_log_max_offset: int
    commit_log_flushed_offset: int
    commit_log_files: int
    dispatched_offset: int
    consume_queues: int
    index_files: int
    put_messages: int
    put_bytes: int
    get_messages: int
    disk_used_ratio: float
    disk_full: bool
    put_latency_ms_max: float

    def as_dict(self) -> dict[str, object]:
        return {item.name: getattr(self, item.name) for item in fields(self)}


@dataclass(slots=True, init=False)
class DispatchRequest:
    """One CommitLog record as the dispatcher sees it (RocketMQ's DispatchRequest)."""

    topic: str
    queue_id: int
    commit_log_offset: int
    size: int
    tags_code: int
    store_timestamp: int
    queue_offset: int
    keys: Sequence[str]
    uniq_key: str | None
    sys_flag: int

    def __init__(  # written out: see rocketq.native.modules
        self,
        topic: str,
        queue_id: int,
        commit_log_offset: int,
        size: int,
        tags_code: int,
        store_timestamp: int,
        queue_offset: int,
        keys: Sequence[str],
        uniq_key: str | None,
        sys_flag: int,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.commit_log_offset = commit_log_offset
        self.size = size
        self.tags_code = tags_code
        self.store_timestamp = store_timestamp
        self.queue_offset = queue_offset
        self.keys = keys
        self.uniq_key = uniq_key
        self.sys_flag = sys_flag
