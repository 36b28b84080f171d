"""Stored records written straight into Arrow's column buffers, in one pass over each buffer.

``fill_columns`` takes buffers of stored records (a pull body, records one after the other, or any
buffer with the start of each wanted record) and returns ``FilledColumns``: for every message column of
the Spark row schema the buffers Arrow lays such a column out in (int32 offsets and one values buffer
for the strings and binaries, a validity bitmap for the nullable ``tags`` and ``keys``, plain int32 and
int64 values for the numbers, timestamps already in microseconds). ``rocketq.client.columns`` wraps
them into a ``pyarrow.RecordBatch`` without copying them again.

One kernel (``_fill``) visits each record once: it checks it as ``rocketq.common.record_columns``
does (the same ``check_record``, ``record_spans`` and walk of the properties), and writes its values at the ends
of the columns; in a buffer of records one after the other it finds the next record from the total
size of this one, so there is no separate walk. Nothing is kept per record in between and no Python
object is made per record. The columns are sized up front from the buffers' sizes: a buffer of records
one after the other holds at most ``len // RECORD_OVERHEAD`` records and its length in bodies, topics
and properties; for records at given positions, a light first pass (``_payload_bound``) adds up their
total sizes. Room that is not written is sliced off. The memory comes from the caller's allocator:
``rocketq.client.columns`` takes it from Arrow's memory pool, which keeps freed memory for the next
batch, so filling a batch does not fault in fresh pages from the system each time.

Compressed bodies (rare: producers compress bodies over 4 KiB) are copied as stored; the caller
inflates the rows listed in ``compressed``. The ``properties`` map column, asked for rarely, is built
from the spans the kernel notes per record (``properties``), with ``record_columns.kernels()``'s
``property_entries``.

Like the other kernels, ``_fill`` is plain Python in the subset numba compiles, compiled on first use
(``kernels()``); without numba, or with ``ROCKETQ_COMPILED_COLUMNS=0``, it runs interpreted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Final

import numpy as np

from rocketq.common import byte_kernels
from rocketq.common import record_columns as rc
from rocketq.common.compile_once import CompileOnce
from rocketq.common.record import RecordFormatError, SysFlag

VARIABLE: Final = ("topic", "msgId", "tags", "keys", "body")
"""The string and binary columns, in the order of ``FilledColumns.offsets`` and ``values``."""
TOPIC, MSG_ID, TAGS, KEYS, BODY = range(len(VARIABLE))
WIDE: Final = ("queueOffset", "bornTimestamp", "storeTimestamp")  # int64 (timestamps in µs)
NARROW: Final = ("queueId", "reconsumeTimes")  # int32
NULLABLE: Final = ("tags", "keys")  # the rows of ``FilledColumns.validity``
MAX_COLUMN_BYTES: Final = 2**31 - 1  # Arrow's string and binary offsets are int32
OFFSET_ID_LENGTH: Final = 32


def _payload_bound(b: Any, positions: Any) -> Any:
    """The bytes the records at ``positions`` hold beyond their fixed part (bodies, topics, properties),
    from their total sizes, counting 0 for a record whose size is not in ``b`` or too small: room enough
    for any column of the records that are sound."""
    limit = len(b)
    room = np.int64(0)
    for i in range(len(positions)):
        p = positions[i]
        if 0 <= p <= limit - 4:
            total = int32_at(b, p)
            if total > RECORD_OVERHEAD:
                room += total - RECORD_OVERHEAD
    return room


def _fill(
    b: Any,
    positions: Any,
    walk_end: Any,
    check_crc: Any,
    row: Any,
    cursor: Any,
    wide: Any,
    narrow: Any,
    offsets: Any,
    validity: Any,
    topic: Any,
    msg_id: Any,
    tags: Any,
    keys: Any,
    body: Any,
    properties: Any,
    compressed: Any,
) -> tuple[Any, Any, Any]:
    """Check the records at ``positions`` (with ``walk_end`` above 0: the records one after the other
    from the start of ``b`` to ``walk_end``, following their total sizes) and write them as rows
    ``row``, ``row + 1``... of the columns; stops at the first one that is not sound: (records written,
    its reason code, its position). ``cursor`` holds where the values of ``topic``, ``msg_id``,
    ``tags``, ``keys`` and ``body`` end, how many rows ``compressed`` lists (row, position), and how
    many rows have tags and keys; it is moved on. ``properties`` (3 by record, or empty when not
    wanted) gets each record's properties start, length and count."""
    walking = walk_end > 0
    limit = walk_end if walking else len(b)
    topic_end, id_end, tags_end, keys_end, body_end = cursor[0], cursor[1], cursor[2], cursor[3], cursor[4]
    squeezed, tagged, keyed = cursor[5], cursor[6], cursor[7]
    noted = properties.shape[1] > 0
    reason = np.int64(OK)
    i = 0
    p = np.int64(0)
    while True:
        if walking:
            if p >= limit:
                break
        elif i < len(positions):
            p = positions[i]
        else:
            break
        reason = check_record(b, p, limit, check_crc)
        if reason != OK:
            break
        body_length, topic_at, topic_length, properties_at, properties_end = record_spans(b, p)
        reason, entries, tags_at, tags_stop, keys_at, keys_stop, uniq_at, uniq_stop = read_properties(
            b, properties_at, properties_end
        )
        if reason != OK:
            break
        r = row + i
        narrow[0, r] = int32_at(b, p + 12)
        wide[0, r] = int64_at(b, p + 20)
        wide[1, r] = int64_at(b, p + 40) * 1000
        wide[2, r] = int64_at(b, p + 56) * 1000
        narrow[1, r] = int32_at(b, p + 72)
        copy(topic, topic_end, b, topic_at + 1, topic_at + 1 + topic_length)
        topic_end += topic_length
        offsets[0, r + 1] = topic_end
        if uniq_at >= 0:
            copy(msg_id, id_end, b, uniq_at, uniq_stop)
            id_end += uniq_stop - uniq_at
        else:  # the offset message id: the store host's 8 bytes and the physical offset's, in hex
            for k in range(16):
                byte = np.int64(b[p + 64 + k]) if k < 8 else np.int64(b[p + 28 + k - 8])
                msg_id[id_end + 2 * k] = HEX[byte >> 4]
                msg_id[id_end + 2 * k + 1] = HEX[byte & 15]
            id_end += OFFSET_ID_LENGTH
        offsets[1, r + 1] = id_end
        if tags_at >= 0:
            copy(tags, tags_end, b, tags_at, tags_stop)
            tags_end += tags_stop - tags_at
            validity[0, r >> 3] |= np.uint8(1 << (r & 7))
            tagged += 1
        offsets[2, r + 1] = tags_end
        if keys_at >= 0:
            copy(keys, keys_end, b, keys_at, keys_stop)
            keys_end += keys_stop - keys_at
            validity[1, r >> 3] |= np.uint8(1 << (r & 7))
            keyed += 1
        offsets[3, r + 1] = keys_end
        copy(body, body_end, b, p + HEAD_SIZE, topic_at)
        body_end += body_length
        offsets[4, r + 1] = body_end
        if int32_at(b, p + 36) & COMPRESSED:
            compressed[0, squeezed] = r
            compressed[1, squeezed] = p
            squeezed += 1
        if noted:
            properties[0, i] = properties_at
            properties[1, i] = properties_end - properties_at
            properties[2, i] = entries
        i += 1
        if walking:
            p += int32_at(b, p)
    cursor[0], cursor[1], cursor[2], cursor[3], cursor[4] = topic_end, id_end, tags_end, keys_end, body_end
    cursor[5], cursor[6], cursor[7] = squeezed, tagged, keyed
    return i, reason, p


# Module-level constants and helpers, frozen into the compiled kernels (see ``record_columns``).
OK = rc.OK
HEAD_SIZE = rc.HEAD_SIZE
RECORD_OVERHEAD = rc.RECORD_OVERHEAD
COMPRESSED = int(SysFlag.COMPRESSED)
HEX = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)
int32_at: Any = byte_kernels.int32_at
int64_at: Any = byte_kernels.int64_at
copy: Any = byte_kernels.copy
check_record: Any = rc.check_record
record_spans: Any = rc.record_spans
read_properties: Any = rc.read_properties

_PLAIN: Final = SimpleNamespace(payload_bound=_payload_bound, fill=_fill)


def _compile(numba: Any) -> SimpleNamespace:
    global int32_at, int64_at, copy, check_record, record_spans, read_properties
    rc.kernels()  # compiles record_columns' helpers, which these kernels share
    int32_at, int64_at, copy = rc.int32_at, rc.int64_at, rc.copy
    check_record, record_spans, read_properties = rc.check_record, rc.record_spans, rc.read_properties
    compiled = SimpleNamespace(
        **{name: numba.njit(nogil=True, cache=True)(kernel) for name, kernel in vars(_PLAIN).items()}
    )
    nothing, none = rc.as_bytes(b""), np.zeros(0, dtype=np.int64)  # every buffer is passed read-only
    compiled.payload_bound(nothing, none)
    Columns(0, 0).fill(compiled.fill, nothing, none, 0, False, np.zeros((3, 0), dtype=np.int64))
    return compiled


_COMPILED = CompileOnce(
    "the record-to-Arrow kernel",
    "filling Arrow columns in plain Python (slowly)",
    _compile,
    ready=rc.compiled_columns_wanted,
)


def kernels() -> SimpleNamespace:
    """The kernels (``payload_bound``, ``fill``): compiled on the first call, or the plain functions."""
    return _COMPILED.get_or(_PLAIN)


@dataclass(frozen=True, slots=True)
class PartProperties:
    """One buffer's records' properties: ``spans[0, i]``, ``spans[1, i]`` are record ``i``'s
    properties start and length in ``data``, ``spans[2, i]`` how many count as properties."""

    data: np.ndarray
    spans: np.ndarray


@dataclass(frozen=True, slots=True)
class FilledColumns:
    """The records' columns in Arrow's layout (see the module docstring). ``values[c]`` are the bytes of
    ``VARIABLE[c]``, ``offsets[c]`` (``count + 1`` int32) where each row's start; ``validity[n]`` the
    little-endian bitmap of ``NULLABLE[n]``, ``null_counts[n]`` its zeros; ``wide[k]`` the int64 values
    of ``WIDE[k]``, ``narrow[k]`` the int32 values of ``NARROW[k]``; ``compressed`` the (row, record
    position) of each compressed body, stored compressed in ``values[BODY]``."""

    count: int
    wide: np.ndarray
    narrow: np.ndarray
    offsets: np.ndarray
    validity: np.ndarray
    null_counts: tuple[int, int]
    values: tuple[np.ndarray, ...]
    compressed: np.ndarray
    properties: tuple[PartProperties, ...]


Allocate = Callable[[int], np.ndarray]
"""Where the columns' memory comes from: ``n`` -> a writable uint8 array of ``n`` bytes (its contents
need not be zero)."""


def numpy_memory(size: int) -> np.ndarray:
    return np.empty(size, dtype=np.uint8)


class Columns:
    """The buffers being filled: room for ``rows`` rows holding at most ``payload`` bytes of bodies,
    topics and properties, taken from ``allocate``."""

    def __init__(self, rows: int, payload: int, allocate: Allocate = numpy_memory) -> None:
        if payload + OFFSET_ID_LENGTH * rows > MAX_COLUMN_BYTES:
            raise RecordFormatError(0, f"{rows} records of {payload} bytes could pass 2 GiB a column: decode fewer")

        def array(shape: tuple[int, int], kind: type[np.generic]) -> np.ndarray:
            width = np.dtype(kind).itemsize
            return allocate(shape[0] * shape[1] * width).view(kind).reshape(shape)

        self.written = 0
        self.cursor = np.zeros(8, dtype=np.int64)  # see ``_fill``
        self.wide = array((len(WIDE), rows), np.int64)
        self.narrow = array((len(NARROW), rows), np.int32)
        self.offsets = array((len(VARIABLE), rows + 1), np.int32)
        self.offsets[:, 0] = 0
        self.validity = array((len(NULLABLE), (rows + 7) // 8), np.uint8)
        self.validity.fill(0)
        self.values = (
            allocate(min(payload, rc.MAX_TOPIC_LENGTH * rows)),  # topic
            allocate(payload + OFFSET_ID_LENGTH * rows),  # msgId
            allocate(payload),  # tags
            allocate(payload),  # keys
            allocate(payload),  # body
        )
        self.compressed = np.empty((2, rows), dtype=np.int64)

    def fill(
        self, kernel: Any, data: np.ndarray, positions: np.ndarray, walk_end: int, check_crc: bool, spans: np.ndarray
    ) -> int:
        """Write the records of ``data`` (at ``positions``, or with ``walk_end``, one after the other up to
        there) as the next rows: how many.

        Raises:
            RecordFormatError: A record is not sound; names its position.
        """
        done, reason, position = kernel(
            data, positions, walk_end, check_crc, self.written, self.cursor, self.wide, self.narrow, self.offsets,
            self.validity, *self.values, spans, self.compressed,
        )  # fmt: skip
        if reason != OK:
            raise RecordFormatError(int(position), rc.explain(data, int(position), int(reason)))
        self.written += int(done)
        return int(done)

    def finish(self, properties: tuple[PartProperties, ...]) -> FilledColumns:
        count, ends = self.written, self.cursor
        return FilledColumns(
            count=count,
            wide=self.wide[:, :count],
            narrow=self.narrow[:, :count],
            offsets=self.offsets[:, : count + 1],
            validity=self.validity[:, : (count + 7) // 8],
            null_counts=(count - int(ends[6]), count - int(ends[7])),
            values=tuple(values[: int(ends[c])] for c, values in enumerate(self.values)),
            compressed=self.compressed[:, : int(ends[5])],
            properties=properties,
        )


_NO_POSITIONS: Final = np.zeros(0, dtype=np.int64)


def fill_columns(
    parts: Sequence[tuple[Any, np.ndarray | Sequence[int] | None]],
    *,
    check_crc: bool = False,
    include_properties: bool = False,
    allocate: Allocate = numpy_memory,
) -> FilledColumns:
    """The records of ``parts`` (buffer, where its wanted records start or None for records one after the
    other from its first byte), in order, as Arrow column buffers. A buffer is any of bytes, bytearray,
    memoryview, mmap or uint8 array; it is not copied, and the result does not refer to it. The
    columns' memory comes from ``allocate``.

    Raises:
        RecordFormatError: A record is not sound (see ``record_columns``), or a column could pass 2 GiB.
    """
    chosen = kernels()
    located: list[tuple[np.ndarray, np.ndarray | None, int]] = []  # buffer, positions, room for rows
    rows = payload = 0
    for buffer, positions in parts:
        data = rc.as_bytes(buffer)
        if positions is None:  # no record is smaller than RECORD_OVERHEAD, none holds more than its buffer
            located.append((data, None, len(data) // RECORD_OVERHEAD))
            payload += len(data)
        else:
            where = np.ascontiguousarray(positions, dtype=np.int64)
            located.append((data, where, len(where)))
            payload += int(chosen.payload_bound(data, where))
        rows += located[-1][2]
    columns = Columns(rows, payload, allocate)
    noted: list[PartProperties] = []
    for data, starts, room in located:
        spans = np.empty((3, room if include_properties else 0), dtype=np.int64)
        if starts is None:
            done = columns.fill(chosen.fill, data, _NO_POSITIONS, len(data), check_crc, spans)
        else:
            done = columns.fill(chosen.fill, data, starts, 0, check_crc, spans)
        if include_properties:
            noted.append(PartProperties(data, np.ascontiguousarray(spans[:, :done])))
    return columns.finish(tuple(noted))
