"""Stored records (``rocketq.common.record``) scanned into columns, with no Python object per record.

``scan_records`` walks a buffer of concatenated records (a pull, view or query body), or the records at
given start positions (a CommitLog file addressed by its ConsumeQueue entries), checks each record, and
returns a ``RecordColumns``: one int64 array per ``FIELDS`` entry, header fields and the spans (start,
length) of the body, the topic, the properties and the TAGS, KEYS and UNIQ_KEY values inside them.
``gather`` copies spans into one contiguous buffer with Arrow-style offsets, ``property_entries`` lists
each record's properties. The Arrow record batches are written by ``rocketq.common.record_arrow``,
which shares this module's record check (``check_record``), the layout arithmetic that finds a record's
body, topic and properties (``record_spans``) and the properties walk (``read_properties``).

A record is accepted when its header fits the buffer, the magic is a message's, the total size, body
length, topic length (1-127) and properties length add up, the hosts use the IPv4 layout (the only one
rocketq writes; RocketMQ's IPv6 layout is refused), the topic and properties are strict UTF-8, and,
when asked, the body CRC matches. The first record that is not stops the scan.

Property lookups follow ``rocketq.common.message.decode_properties``: ``name \\x01 value`` segments
separated by ``\\x02``; a segment with an empty name or value, or without ``\\x01``, does not count;
a repeated name keeps its first place and its last value.

The kernels are plain Python in the subset numba compiles. ``kernels()`` compiles them on the first call
(``nogil``, cached next to this module, ~10 s the first time, then loaded in well under a second); without
numba, or with ``ROCKETQ_COMPILED_COLUMNS=0``, the same functions run interpreted: correct (a test
checks they give the same batches), but about a hundred times slower.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Final

import numpy as np

from rocketq.common import byte_kernels
from rocketq.common import record as rec
from rocketq.common.compile_once import CompileOnce
from rocketq.common.record import RecordFormatError

FIELDS: Final = (
    "position",  # where the record starts in the buffer
    "total_size",
    "queue_id",
    "flag",
    "queue_offset",
    "physical_offset",
    "sys_flag",
    "born_timestamp",  # ms
    "store_timestamp",  # ms
    "reconsume_times",
    "body_at",
    "body_length",
    "topic_at",
    "topic_length",
    "properties_at",
    "properties_length",
    "tags_at",  # -1: no TAGS
    "tags_length",
    "keys_at",  # -1: no KEYS
    "keys_length",
    "uniq_at",  # -1: no UNIQ_KEY
    "uniq_length",
    "property_count",  # segments that count as properties (repeated names included)
)
(
    POSITION, TOTAL_SIZE, QUEUE_ID, FLAG, QUEUE_OFFSET, PHYSICAL_OFFSET, SYS_FLAG, BORN_TIMESTAMP,
    STORE_TIMESTAMP, RECONSUME_TIMES, BODY_AT, BODY_LENGTH, TOPIC_AT, TOPIC_LENGTH, PROPERTIES_AT,
    PROPERTIES_LENGTH, TAGS_AT, TAGS_LENGTH, KEYS_AT, KEYS_LENGTH, UNIQ_AT, UNIQ_LENGTH, PROPERTY_COUNT,
) = range(len(FIELDS))  # fmt: skip

OK: Final = 0
REASONS: Final = (
    "",
    "truncated: fewer bytes left than a record",
    "bad magic",
    "bad total size",
    "bad body length",
    "bad topic length",
    "lengths do not add up to the total size",
    "body CRC mismatch",
    "hosts in the IPv6 layout (not supported)",
    "topic is not UTF-8",
    "properties are not UTF-8",
)
"""Why a record was refused, by the code the kernels return."""


def _check_record(b: Any, p: Any, limit: Any, check_crc: Any) -> Any:
    """The reason code of the record at ``p`` (which must end by ``limit``), ``OK`` when it is sound."""
    if p < 0 or limit - p < RECORD_OVERHEAD:
        return 1
    if int32_at(b, p + 4) != MESSAGE_MAGIC:
        return 2
    total = int32_at(b, p + 0)
    if total < RECORD_OVERHEAD or total > limit - p:
        return 3
    body_length = int32_at(b, p + 84)
    if body_length < 0 or body_length > total - RECORD_OVERHEAD:
        return 4
    topic_at = p + HEAD_SIZE + body_length
    topic_length = np.int64(b[topic_at])
    if topic_length == 0 or topic_length > MAX_TOPIC_LENGTH:
        return 5
    properties_at = topic_at + 3 + topic_length
    if properties_at > p + total:
        return 6
    properties_length = (np.int64(b[properties_at - 2]) << 8) | np.int64(b[properties_at - 1])
    if properties_length >= 32768 or RECORD_OVERHEAD + body_length + topic_length + properties_length != total:
        return 6
    if int32_at(b, p + 36) & V6_HOSTS:
        return 8
    if not utf8_valid(b, topic_at + 1, topic_at + 1 + topic_length):
        return 9
    if check_crc and crc32(b, p + HEAD_SIZE, p + HEAD_SIZE + body_length) & 0x7FFFFFFF != int32_at(b, p + 8):
        return 7
    return OK


def _record_spans(b: Any, p: Any) -> tuple[Any, Any, Any, Any, Any]:
    """Where the parts of the record at ``p`` lie, for a record ``check_record`` passed: (body length,
    position of the topic's length byte, topic length, properties start, properties end). The body
    starts at ``p + HEAD_SIZE``, the topic's bytes at the length byte's position plus 1."""
    body_length = int32_at(b, p + 84)
    topic_at = p + HEAD_SIZE + body_length
    topic_length = np.int64(b[topic_at])
    properties_at = topic_at + 3 + topic_length
    properties_end = properties_at + ((np.int64(b[properties_at - 2]) << 8) | np.int64(b[properties_at - 1]))
    return body_length, topic_at, topic_length, properties_at, properties_end


def _utf8_valid(b: Any, start: Any, stop: Any) -> bool:
    """Whether ``b[start:stop]`` is strict UTF-8 (see ``byte_kernels.utf8_sequence``)."""
    k = start
    while k < stop:
        if b[k] < 0x80:
            k += 1
            continue
        length = utf8_sequence(b, k, stop)
        if length == 0:
            return False
        k += length
    return True


def _walk(b: Any, start: Any, end: Any, positions: Any) -> tuple[Any, Any, Any]:
    """Record starts from ``start`` to ``end``, following total sizes: (count, reason, position of the
    record that stopped the walk). Writes the starts into ``positions`` when it is long enough."""
    count = 0
    p = start
    while p < end:
        if end - p < RECORD_OVERHEAD:
            return count, 1, p
        total = int32_at(b, p)
        if int32_at(b, p + 4) != MESSAGE_MAGIC:
            return count, 2, p
        if total < RECORD_OVERHEAD or total > end - p:
            return count, 3, p
        if count < len(positions):
            positions[count] = p
        count += 1
        p += total
    return count, OK, p


def _scan(b: Any, positions: Any, check_crc: Any, out: Any) -> tuple[Any, Any]:
    """Check the records at ``positions`` and fill ``out`` (``FIELDS`` by record); stops at the first
    one that is not sound: (records filled, its reason code)."""
    limit = len(b)
    for i in range(len(positions)):
        p = positions[i]
        reason = check_record(b, p, limit, check_crc)
        if reason != OK:
            return i, reason
        body_length, topic_at, topic_length, properties_at, properties_end = record_spans(b, p)
        reason, entries, tags_at, tags_stop, keys_at, keys_stop, uniq_at, uniq_stop = read_properties(
            b, properties_at, properties_end
        )
        if reason != OK:
            return i, reason
        row = out[:, i]
        row[POSITION] = p
        row[TOTAL_SIZE] = int32_at(b, p)
        row[QUEUE_ID] = int32_at(b, p + 12)
        row[FLAG] = int32_at(b, p + 16)
        row[QUEUE_OFFSET] = int64_at(b, p + 20)
        row[PHYSICAL_OFFSET] = int64_at(b, p + 28)
        row[SYS_FLAG] = int32_at(b, p + 36)
        row[BORN_TIMESTAMP] = int64_at(b, p + 40)
        row[STORE_TIMESTAMP] = int64_at(b, p + 56)
        row[RECONSUME_TIMES] = int32_at(b, p + 72)
        row[BODY_AT] = p + HEAD_SIZE
        row[BODY_LENGTH] = body_length
        row[TOPIC_AT] = topic_at + 1
        row[TOPIC_LENGTH] = topic_length
        row[PROPERTIES_AT] = properties_at
        row[PROPERTIES_LENGTH] = properties_end - properties_at
        row[TAGS_AT] = tags_at
        row[TAGS_LENGTH] = tags_stop - tags_at if tags_at >= 0 else 0
        row[KEYS_AT] = keys_at
        row[KEYS_LENGTH] = keys_stop - keys_at if keys_at >= 0 else 0
        row[UNIQ_AT] = uniq_at
        row[UNIQ_LENGTH] = uniq_stop - uniq_at if uniq_at >= 0 else 0
        row[PROPERTY_COUNT] = entries
    return len(positions), OK


def _read_properties(b: Any, start: Any, end: Any) -> tuple[Any, Any, Any, Any, Any, Any, Any, Any]:
    """Walk the properties ``b[start:end]`` once (segments, names and UTF-8 in the same pass): (reason
    code, segments that count as properties, then start and stop of the TAGS, KEYS and UNIQ_KEY values,
    -1 and -1 for a name that is absent)."""
    tags_at = keys_at = uniq_at = np.int64(-1)
    tags_stop = keys_stop = uniq_stop = np.int64(-1)
    entries = np.int64(0)
    segment = start
    name_end = np.int64(-1)  # the segment's first NAME_VALUE_SEPARATOR
    k = start
    while k <= end:
        while k < end and PROPERTY_SEPARATOR < b[k] < 0x80:  # plain ASCII: nothing to note
            k += 1
        c = np.int64(b[k]) if k < end else np.int64(PROPERTY_SEPARATOR)
        if c == PROPERTY_SEPARATOR:
            if segment < name_end < k - 1:  # a name, the separator, a value
                entries += 1
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
            length = utf8_sequence(b, k, end)
            if length == 0:
                return np.int64(10), entries, tags_at, tags_stop, keys_at, keys_stop, uniq_at, uniq_stop
            k += length
            continue
        k += 1
    return np.int64(OK), entries, tags_at, tags_stop, keys_at, keys_stop, uniq_at, uniq_stop


def _gather(b: Any, starts: Any, lengths: Any, offsets: Any, out: Any) -> None:
    """Copy span ``i`` (``b[starts[i] : starts[i] + lengths[i]]``) to ``out[offsets[i]:]``; spans that
    start below 0 are left for the caller."""
    for i in range(len(starts)):
        if starts[i] >= 0:
            copy(out, offsets[i], b, starts[i], starts[i] + lengths[i])


def _property_entries(b: Any, properties_at: Any, properties_length: Any, entries_end: Any, spans: Any) -> None:
    """Each record's properties as (name start, name length, value start, value length) rows of ``spans``,
    record ``i``'s from where record ``i - 1``'s end; ``entries_end[i]`` is set to where they end. A
    repeated name keeps its first row and takes the later value."""
    n = 0
    for i in range(len(properties_at)):
        first = n
        end = properties_at[i] + properties_length[i]
        segment = properties_at[i]
        while segment < end:
            stop = segment
            while stop < end and b[stop] != PROPERTY_SEPARATOR:
                stop += 1
            name_end = segment
            while name_end < stop and b[name_end] != NAME_VALUE_SEPARATOR:
                name_end += 1
            if segment < name_end < stop - 1:
                name_length = name_end - segment
                row = n
                for j in range(first, n):
                    name = b[spans[j, 0] : spans[j, 0] + name_length]
                    if spans[j, 1] == name_length and starts_with(b, segment, name_end, name):
                        row = j
                        break
                if row == n:
                    spans[n, 0] = segment
                    spans[n, 1] = name_length
                    n += 1
                spans[row, 2] = name_end + 1
                spans[row, 3] = stop - name_end - 1
            segment = stop + 1
        entries_end[i] = n


# Module-level constants: numba freezes them into the compiled code.
HEAD_SIZE = rec.HEAD_SIZE
RECORD_OVERHEAD = rec.RECORD_OVERHEAD
MESSAGE_MAGIC = rec.MESSAGE_MAGIC
MAX_TOPIC_LENGTH = rec.MAX_TOPIC_LENGTH
V6_HOSTS = int(rec.SysFlag.BORNHOST_V6 | rec.SysFlag.STOREHOST_V6)
PROPERTY_SEPARATOR = 2
NAME_VALUE_SEPARATOR = 1
TAGS = np.frombuffer(b"TAGS\x01", dtype=np.uint8)
KEYS = np.frombuffer(b"KEYS\x01", dtype=np.uint8)
UNIQ = np.frombuffer(b"UNIQ_KEY\x01", dtype=np.uint8)
# The helpers the kernels call: the plain functions until ``kernels()`` swaps in compiled ones.
int32_at: Any = byte_kernels.int32_at
int64_at: Any = byte_kernels.int64_at
starts_with: Any = byte_kernels.starts_with
crc32: Any = byte_kernels.crc32
copy: Any = byte_kernels.copy
utf8_valid: Any = _utf8_valid
utf8_sequence: Any = byte_kernels.utf8_sequence
check_record: Any = _check_record
record_spans: Any = _record_spans
read_properties: Any = _read_properties

_PLAIN: Final = SimpleNamespace(
    walk=_walk,
    scan=_scan,
    gather=_gather,
    property_entries=_property_entries,
)


def _compile(numba: Any) -> SimpleNamespace:
    global int32_at, int64_at, starts_with, crc32, copy, utf8_valid, utf8_sequence, check_record, record_spans
    global read_properties
    int32_at = numba.njit(inline="always")(byte_kernels.int32_at)
    int64_at = numba.njit(inline="always")(byte_kernels.int64_at)
    starts_with = numba.njit(inline="always")(byte_kernels.starts_with)
    crc32 = numba.njit(inline="always")(byte_kernels.crc32)
    copy = numba.njit(inline="never")(byte_kernels.copy)
    utf8_sequence = numba.njit(inline="never")(byte_kernels.utf8_sequence)
    utf8_valid = numba.njit(inline="always")(_utf8_valid)
    check_record = numba.njit(inline="always")(_check_record)
    record_spans = numba.njit(inline="always")(_record_spans)
    read_properties = numba.njit(inline="always")(_read_properties)
    compiled = SimpleNamespace(
        **{name: numba.njit(nogil=True, cache=True)(kernel) for name, kernel in vars(_PLAIN).items()}
    )
    nothing = _readonly(np.zeros(0, dtype=np.uint8))  # every buffer is passed read-only: one signature
    none = np.zeros(0, dtype=np.int64)
    compiled.walk(nothing, 0, 0, none)
    compiled.scan(nothing, none, False, np.zeros((len(FIELDS), 0), dtype=np.int64))
    compiled.gather(nothing, none, none, none, np.zeros(0, dtype=np.uint8))
    compiled.property_entries(nothing, none, none, none, np.zeros((0, 4), dtype=np.int64))
    return compiled


def compiled_columns_wanted() -> bool:
    """Whether the column kernels (these and ``record_arrow``'s) may be compiled:
    ``ROCKETQ_COMPILED_COLUMNS=0`` keeps them interpreted."""
    return os.environ.get("ROCKETQ_COMPILED_COLUMNS", "1") != "0"


_COMPILED = CompileOnce(
    "the record column kernels", "decoding columns in plain Python (slowly)", _compile, ready=compiled_columns_wanted
)


def kernels() -> SimpleNamespace:
    """The kernels (``walk``, ``scan``, ``gather``, ``property_entries``):
    compiled on the first call, or the plain functions without numba."""
    return _COMPILED.get_or(_PLAIN)


def _readonly(array: np.ndarray) -> np.ndarray:
    if array.flags.writeable:
        array = array.view()
        array.flags.writeable = False
    return array


def as_bytes(buffer: Any) -> np.ndarray:
    """A read-only uint8 array over ``buffer`` (bytes, bytearray, memoryview, mmap or a uint8 array),
    without copying."""
    if isinstance(buffer, np.ndarray):
        if buffer.dtype != np.uint8 or buffer.ndim != 1:
            raise TypeError(f"expected a one-dimensional uint8 array, got {buffer.dtype} with {buffer.ndim} dims")
        return _readonly(np.ascontiguousarray(buffer))
    return _readonly(np.frombuffer(buffer, dtype=np.uint8))


@dataclass(frozen=True, slots=True)
class RecordColumns:
    """Scanned records: ``fields[FIELD, i]`` is record ``i``'s value of ``FIELDS[FIELD]``; spans are
    positions in ``data``."""

    data: np.ndarray  # the scanned buffer, read-only uint8
    fields: np.ndarray  # int64, shape (len(FIELDS), records)

    def __len__(self) -> int:
        return int(self.fields.shape[1])

    def column(self, name: str) -> np.ndarray:
        """The int64 values of one of ``FIELDS``."""
        values: np.ndarray = self.fields[FIELDS.index(name)]
        return values

    def head(self, count: int) -> RecordColumns:
        """The first ``count`` records."""
        return RecordColumns(self.data, self.fields[:, :count])


_ONE_WALK_MAX_RECORDS: Final = 65_536


def record_positions(buffer: Any, start: int = 0, end: int | None = None) -> np.ndarray:
    """The start of every record in ``buffer[start:end]``, which must hold whole records one after the
    other (a pull, view or query body).

    Raises:
        RecordFormatError: A record's size or magic is wrong, or the last one is cut short.
    """
    data = as_bytes(buffer)
    stop = len(data) if end is None else end
    walk = kernels().walk
    # room for as many records as could fit (none is smaller than RECORD_OVERHEAD): one walk; a large
    # buffer is walked twice instead, counting first, so the room is not many times what is needed
    bound = max(0, stop - start) // RECORD_OVERHEAD + 1
    room = np.empty(bound if bound <= _ONE_WALK_MAX_RECORDS else 0, dtype=np.int64)
    count, reason, position = walk(data, start, stop, room)
    if reason != OK:
        raise RecordFormatError(int(position), explain(data, int(position), reason))
    if count <= len(room):
        return room[:count]
    positions = np.empty(count, dtype=np.int64)
    walk(data, start, stop, positions)
    return positions


def scan_records(buffer: Any, positions: np.ndarray | None = None, *, check_crc: bool = False) -> RecordColumns:
    """Every record of ``buffer`` (at ``positions``, or one after the other from its start) as columns.

    Raises:
        RecordFormatError: A record is not sound (see the module docstring); names its position.
    """
    columns, error = scan_prefix(buffer, positions, check_crc=check_crc)
    if error is not None:
        raise error
    return columns


def scan_prefix(
    buffer: Any, positions: np.ndarray | None = None, *, check_crc: bool = False
) -> tuple[RecordColumns, RecordFormatError | None]:
    """``scan_records`` that stops at the first record that is not sound: the columns of the records
    before it, and the error it would raise (None when every record is sound)."""
    data = as_bytes(buffer)
    where = record_positions(data) if positions is None else np.ascontiguousarray(positions, dtype=np.int64)
    fields = np.empty((len(FIELDS), len(where)), dtype=np.int64)
    count, reason = kernels().scan(data, where, bool(check_crc), fields)
    columns = RecordColumns(data, fields[:, :count])
    if reason == OK:
        return columns, None
    position = int(where[count])
    return columns, RecordFormatError(position, explain(data, position, reason))


def explain(data: np.ndarray, position: int, reason: int) -> str:
    """The reason's text, with the value that failed where there is one."""
    text = REASONS[reason]
    if 0 <= position <= len(data) - 8 and reason in (2, 3):
        total, magic = rec.SIZE_AND_MAGIC.unpack_from(data.data, position)
        text += f" {magic & 0xFFFFFFFF:#010x}" if reason == 2 else f" {total}"
    elif position < 0 or position > len(data):
        text = f"position outside the {len(data)}-byte buffer"
    return text
