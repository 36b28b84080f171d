"""Stored records gathered straight into Arrow-layout column buffers, one compiled pass, no Python object
per record.

``gather_records`` is given a buffer (a mapped CommitLog file) and, for each wanted record, where it
starts and what its index entry says it is (total size and queue offset; the topic and queue id are
the read's). In one pass over the records it checks each one and writes the columns a reader of
messages needs, already in Arrow's layout (``GatheredColumns``): int32 value offsets, value bytes and
a validity byte per row for ``body``, ``tags``, ``keys`` and ``msgId``, and int64/int32 values for the
timestamps (microseconds, Arrow's ``timestamp[us]``) and ``reconsumeTimes``. The topic, queue id and
queue offsets are the entries' (checked equal), so they are not copied.

A record is accepted exactly when ``rocketq.common.record_columns`` accepts it (its header, lengths,
IPv4 hosts, strict UTF-8 properties and, when asked, the body CRC) and it is the record its entry
describes (size, topic, queue id, queue offset). The pass stops at the first one that is not and says
where; the caller then asks the plain scan why (``rocketq.store.readonly`` does), so the errors are
the plain path's. The TAGS, KEYS and UNIQ_KEY values follow ``decode_properties``: ``name \\x01 value``
segments separated by ``\\x02``, a segment without a name, a separator or a value does not count, and a
repeated name takes its last value. A compressed body is copied as stored and its row listed in
``compressed``; ``inflate_compressed`` inflates those afterwards (in Python: producers compress only
bodies over 4 KiB, so there are few).

The body CRC is CRC-32 (``zlib.crc32``) by tables, eight bytes a step (``byte_kernels.crc32``). The
kernel is plain Python in the subset numba compiles, compiled on first use (``nogil``, cached next to
this module); without numba, or with ``ROCKETQ_COMPILED_COLUMNS=0``, the same function runs interpreted
(correct, about a hundred times slower).
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from rocketq.common import byte_kernels
from rocketq.common import record as rec
from rocketq.common.compile_once import CompileOnce
from rocketq.common.record import RecordFormatError

OFFSET_ID_LENGTH: Final = 32
"""An offset message id: the store host's 8 bytes and the CommitLog offset's 8, as upper-case hex."""
MAX_COLUMN_BYTES: Final = 2**31 - 1
"""Arrow's string and binary offsets are int32."""


def _gather(
    b: Any,
    positions: Any,
    sizes: Any,
    queue_offsets: Any,
    topic: Any,
    queue_id: Any,
    check_crc: Any,
    row0: Any,
    times: Any,
    reconsume: Any,
    valid: Any,
    offsets: Any,
    body: Any,
    tags: Any,
    keys: Any,
    ids: Any,
    compressed: Any,
) -> tuple[Any, Any]:
    """Check the records at ``positions`` (entry ``i``: ``sizes[i]``, ``queue_offsets[i]``) and write
    them as rows ``row0 + i``: ``times[0|1, row]`` born/store microseconds, ``reconsume[row]``,
    ``valid[0|1, row]`` whether TAGS/KEYS are set, ``offsets[column, row + 1]`` the end of the row's
    value in ``body``/``tags``/``keys``/``ids`` (columns 0-3; ``offsets[:, row0]`` is where it
    starts), ``compressed[row]``. Returns (records written, 0), or (the index of the first record that
    is not sound or not its entry's, 1)."""
    limit = len(b)
    for i in range(len(positions)):
        p = positions[i]
        row = row0 + i
        if p < 0 or limit - p < RECORD_OVERHEAD:
            return i, 1
        total = int32_at(b, p)
        if total != sizes[i] or total > limit - p or int32_at(b, p + 4) != MESSAGE_MAGIC:
            return i, 1
        body_length = int32_at(b, p + 84)
        if body_length < 0 or body_length > total - RECORD_OVERHEAD:
            return i, 1
        topic_at = p + HEAD_SIZE + body_length
        if np.int64(b[topic_at]) != len(topic) or not starts_with(b, topic_at + 1, p + total, topic):
            return i, 1
        properties_at = topic_at + 3 + len(topic)
        if properties_at > p + total:
            return i, 1
        properties_end = properties_at + ((np.int64(b[properties_at - 2]) << 8) | np.int64(b[properties_at - 1]))
        if properties_end - properties_at >= 32768 or properties_end != p + total:
            return i, 1
        sys_flag = int32_at(b, p + 36)
        if sys_flag & V6_HOSTS or int32_at(b, p + 12) != queue_id or int64_at(b, p + 20) != queue_offsets[i]:
            return i, 1
        if check_crc and crc32(b, p + HEAD_SIZE, p + HEAD_SIZE + body_length) & 0x7FFFFFFF != int32_at(b, p + 8):
            return i, 1
        tags_at = keys_at = uniq_at = np.int64(-1)
        tags_stop = keys_stop = uniq_stop = np.int64(-1)
        segment = properties_at
        name_end = np.int64(-1)  # the segment's first NAME_VALUE_SEPARATOR
        k = properties_at
        while k <= properties_end:
            while k < properties_end and PROPERTY_SEPARATOR < b[k] < 0x80:  # plain ASCII: nothing to note
                k += 1
            c = np.int64(b[k]) if k < properties_end else np.int64(PROPERTY_SEPARATOR)
            if c == PROPERTY_SEPARATOR:
                if segment < name_end < k - 1:  # a name, the separator, a value
                    name_length = name_end - segment
                    if name_length == 4 and starts_with(b, segment, k, TAGS):
                        tags_at, tags_stop = name_end + 1, k
                    elif name_length == 4 and starts_with(b, segment, k, KEYS):
                        keys_at, keys_stop = name_end + 1, k
                    elif name_length == 8 and starts_with(b, segment, k, UNIQ):
                        uniq_at, uniq_stop = name_end + 1, k
                segment = k + 1
                name_end = np.int64(-1)
            elif c == NAME_VALUE_SEPARATOR:
                if name_end < 0:
                    name_end = k
            elif c >= 0x80:
                length = utf8_sequence(b, k, properties_end)
                if length == 0:
                    return i, 1
                k += length
                continue
            k += 1
        times[0, row] = int64_at(b, p + 40) * 1000
        times[1, row] = int64_at(b, p + 56) * 1000
        reconsume[row] = int32_at(b, p + 72)
        compressed[row] = sys_flag & COMPRESSED
        at = offsets[0, row]
        copy(body, at, b, p + HEAD_SIZE, p + HEAD_SIZE + body_length)
        offsets[0, row + 1] = at + body_length
        at = offsets[1, row]
        valid[0, row] = tags_at >= 0
        if tags_at >= 0:
            copy(tags, at, b, tags_at, tags_stop)
            at += tags_stop - tags_at
        offsets[1, row + 1] = at
        at = offsets[2, row]
        valid[1, row] = keys_at >= 0
        if keys_at >= 0:
            copy(keys, at, b, keys_at, keys_stop)
            at += keys_stop - keys_at
        offsets[2, row + 1] = at
        at = offsets[3, row]
        if uniq_at >= 0:
            copy(ids, at, b, uniq_at, uniq_stop)
            offsets[3, row + 1] = at + uniq_stop - uniq_at
        else:
            for j in range(16):
                byte = np.int64(b[p + 64 + j]) if j < 8 else np.int64(b[p + 28 + j - 8])
                ids[at + 2 * j] = HEX[byte >> 4]
                ids[at + 2 * j + 1] = HEX[byte & 15]
            offsets[3, row + 1] = at + OFFSET_ID_LENGTH
    return len(positions), 0


# Module-level constants: numba freezes them into the compiled code.
HEAD_SIZE = rec.HEAD_SIZE
RECORD_OVERHEAD = rec.RECORD_OVERHEAD
MESSAGE_MAGIC = rec.MESSAGE_MAGIC
V6_HOSTS = int(rec.SysFlag.BORNHOST_V6 | rec.SysFlag.STOREHOST_V6)
COMPRESSED = int(rec.SysFlag.COMPRESSED)
PROPERTY_SEPARATOR = 2
NAME_VALUE_SEPARATOR = 1
TAGS = np.frombuffer(b"TAGS\x01", dtype=np.uint8)
KEYS = np.frombuffer(b"KEYS\x01", dtype=np.uint8)
UNIQ = np.frombuffer(b"UNIQ_KEY\x01", dtype=np.uint8)
HEX = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)
# The helpers the kernel calls: the plain functions until ``_compile`` swaps in compiled ones.
int32_at: Any = byte_kernels.int32_at
int64_at: Any = byte_kernels.int64_at
starts_with: Any = byte_kernels.starts_with
crc32: Any = byte_kernels.crc32
copy: Any = byte_kernels.copy
utf8_sequence: Any = byte_kernels.utf8_sequence


@dataclass(frozen=True, slots=True)
class _Kernels:
    gather: Any
    crc32: Any  # (b, start, stop) -> zlib.crc32(b[start:stop])


_PLAIN: Final = _Kernels(_gather, byte_kernels.crc32)


def _compile(numba: Any) -> _Kernels:
    global int32_at, int64_at, starts_with, crc32, copy, utf8_sequence
    int32_at = numba.njit(inline="always")(byte_kernels.int32_at)
    int64_at = numba.njit(inline="always")(byte_kernels.int64_at)
    starts_with = numba.njit(inline="always")(byte_kernels.starts_with)
    crc32 = numba.njit(inline="always")(byte_kernels.crc32)
    copy = numba.njit(inline="never")(byte_kernels.copy)
    utf8_sequence = numba.njit(inline="never")(byte_kernels.utf8_sequence)
    compiled = _Kernels(
        numba.njit(nogil=True, cache=True)(_gather), numba.njit(nogil=True, cache=True)(byte_kernels.crc32)
    )
    columns = _Columns.empty(0, 0)
    nothing = np.zeros(0, dtype=np.uint8)
    nothing.flags.writeable = False  # every buffer is passed read-only: one signature
    none = np.zeros(0, dtype=np.int64)
    compiled.gather(nothing, none, none, none, nothing, 0, False, 0, *columns.outputs())
    compiled.crc32(nothing, 0, 0)
    return compiled


_COMPILED = CompileOnce(
    "the record gather kernel",
    "gathering columns in plain Python (slowly)",
    _compile,
    ready=lambda: os.environ.get("ROCKETQ_COMPILED_COLUMNS", "1") != "0",
)


def _kernels() -> _Kernels:
    compiled = _COMPILED.get()
    return _PLAIN if compiled is None else compiled


def table_crc32(data: bytes | np.ndarray) -> int:
    """``zlib.crc32(data)`` computed as the kernel checks bodies (by tables; compiled when numba is
    there)."""
    array = np.frombuffer(data, dtype=np.uint8) if isinstance(data, bytes) else data
    return int(_kernels().crc32(array, 0, len(array))) & 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class _Columns:
    """The output buffers of ``rows`` rows (see ``_gather``); ``capacity`` bytes for each value column."""

    times: np.ndarray  # int64 (2, rows): born, store, in microseconds
    reconsume: np.ndarray  # int32 (rows,)
    valid: np.ndarray  # bool (2, rows): TAGS, KEYS set
    offsets: np.ndarray  # int32 (4, rows + 1): body, tags, keys, msgId
    body: np.ndarray  # uint8
    tags: np.ndarray
    keys: np.ndarray
    ids: np.ndarray
    compressed: np.ndarray  # int8 (rows,)

    @classmethod
    def empty(cls, rows: int, capacity: int) -> _Columns:
        offsets = np.empty((4, rows + 1), dtype=np.int32)
        offsets[:, 0] = 0
        return cls(
            times=np.empty((2, rows), dtype=np.int64),
            reconsume=np.empty(rows, dtype=np.int32),
            valid=np.empty((2, rows), dtype=np.bool_),
            offsets=offsets,
            body=np.empty(capacity, dtype=np.uint8),
            tags=np.empty(capacity, dtype=np.uint8),
            keys=np.empty(capacity, dtype=np.uint8),
            ids=np.empty(capacity + OFFSET_ID_LENGTH * rows, dtype=np.uint8),
            compressed=np.empty(rows, dtype=np.int8),
        )

    def outputs(self) -> tuple[np.ndarray, ...]:
        return (
            self.times,
            self.reconsume,
            self.valid,
            self.offsets,
            self.body,
            self.tags,
            self.keys,
            self.ids,
            self.compressed,
        )


@dataclass(frozen=True, slots=True)
class VariableColumn:
    """A string or binary column in Arrow's layout: ``values[offsets[i]:offsets[i + 1]]`` is row ``i``'s
    value; ``valid`` (a bool per row) is None when every row has one."""

    offsets: np.ndarray  # int32, rows + 1, from 0
    values: np.ndarray  # uint8
    valid: np.ndarray | None


@dataclass(frozen=True, slots=True)
class GatheredColumns:
    """Rows gathered from stored records, in their entries' order (see the module docstring)."""

    queue_offsets: np.ndarray  # int64
    born_us: np.ndarray  # int64, microseconds since the epoch
    store_us: np.ndarray  # int64
    reconsume_times: np.ndarray  # int32
    body: VariableColumn
    tags: VariableColumn
    keys: VariableColumn
    msg_id: VariableColumn
    compressed_rows: np.ndarray  # int64: rows whose ``body`` is still compressed (``inflate_compressed``)

    def __len__(self) -> int:
        return len(self.queue_offsets)


class Gathering:
    """One gather of up to ``rows`` records whose entries' sizes add up to ``record_bytes``, fed one
    buffer at a time (the records of one read can be in several CommitLog files) with ``add``."""

    def __init__(self, rows: int, record_bytes: int, *, check_crc: bool) -> None:
        if record_bytes + OFFSET_ID_LENGTH * rows > MAX_COLUMN_BYTES:
            raise ValueError(f"{rows} records of {record_bytes} bytes are too many for one batch: gather fewer")
        self.check_crc = check_crc
        self._columns = _Columns.empty(rows, record_bytes)
        self._queue_offsets: list[np.ndarray] = [np.zeros(0, dtype=np.int64)]
        self.rows = 0

    def add(
        self,
        data: np.ndarray,
        positions: np.ndarray,
        sizes: np.ndarray,
        queue_offsets: np.ndarray,
        topic: bytes,
        queue_id: int,
    ) -> int | None:
        """Gather the records of ``data`` (read-only uint8) at ``positions`` described by their entries
        (``sizes``, ``queue_offsets``; int64 arrays). Returns None when all were gathered, or the index of
        the first one that is not sound or not what its entry says (those before it are gathered)."""
        if not 0 < len(topic) <= rec.MAX_TOPIC_LENGTH:
            return 0  # no record can be of this topic
        name = np.frombuffer(topic, dtype=np.uint8)
        done, failed = _kernels().gather(
            data, positions, sizes, queue_offsets, name, queue_id, self.check_crc, self.rows, *self._columns.outputs()
        )
        self._queue_offsets.append(queue_offsets[:done])
        self.rows += int(done)
        return int(done) if failed else None

    def result(self) -> GatheredColumns:
        """The rows gathered so far."""
        c, rows = self._columns, self.rows
        offsets = c.offsets[:, : rows + 1]
        tags_valid, keys_valid = c.valid[0, :rows], c.valid[1, :rows]
        queue_offsets = self._queue_offsets[1] if len(self._queue_offsets) == 2 else np.concatenate(self._queue_offsets)
        return GatheredColumns(
            queue_offsets=np.ascontiguousarray(queue_offsets, dtype=np.int64),
            born_us=c.times[0, :rows],
            store_us=c.times[1, :rows],
            reconsume_times=c.reconsume[:rows],
            body=VariableColumn(offsets[0], c.body[: offsets[0, -1]], None),
            tags=VariableColumn(offsets[1], c.tags[: offsets[1, -1]], tags_valid),
            keys=VariableColumn(offsets[2], c.keys[: offsets[2, -1]], keys_valid),
            msg_id=VariableColumn(offsets[3], c.ids[: offsets[3, -1]], None),
            compressed_rows=np.flatnonzero(c.compressed[:rows]),
        )


def inflate_compressed(columns: GatheredColumns) -> VariableColumn:
    """The body column with the compressed bodies inflated (``columns.body`` itself when there are none).

    Raises:
        RecordFormatError: A compressed body does not inflate (the position is its row).
    """
    body = columns.body
    if len(columns.compressed_rows) == 0:
        return body
    offsets = body.offsets.astype(np.int64)
    pieces: list[np.ndarray] = []
    lengths = np.diff(offsets)
    last = 0
    for row in columns.compressed_rows.tolist():
        start, stop = int(offsets[row]), int(offsets[row + 1])
        try:
            inflated = zlib.decompress(body.values[start:stop].data)
        except zlib.error as exc:
            raise RecordFormatError(row, f"compressed body of row {row} does not inflate: {exc}") from exc
        pieces.append(body.values[int(offsets[last]) : start])
        pieces.append(np.frombuffer(inflated, dtype=np.uint8))
        lengths[row] = len(inflated)
        last = row + 1
    pieces.append(body.values[int(offsets[last]) :])
    new_offsets = np.zeros(len(offsets), dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    if new_offsets[-1] > MAX_COLUMN_BYTES:
        raise RecordFormatError(0, "the body column would pass 2 GiB: gather fewer records")
    return VariableColumn(new_offsets.astype(np.int32), np.concatenate(pieces), None)
