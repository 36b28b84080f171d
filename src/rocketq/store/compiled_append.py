"""A producer's batch appended straight from its wire body, compiled with numba.

A SEND_BATCH_MESSAGE body is a run of items (``rocketq.protocol.batch``: int32 total size, int32
magic, int32 body CRC, int32 flag, int32 body length + body, int16 properties length + properties).
Decoding it into one Python object per message and packing each into the CommitLog cost ~2.3 µs a
message; here two compiled passes do the work with no per-message Python:

- ``measure_batch`` checks every item's sizes and computes the size of the record it becomes; it
  returns their count, the wait flag below, their sum and the largest. The count is -1, so that the
  caller decodes the batch and takes the per-message path instead, for anything that path treats
  specially or refuses with its own message: sizes that do not add up, a body over the limit,
  properties that are not ASCII or that name a property the broker sets or acts on
  (``SPECIAL_NAMES``, matched as ``name\x01`` anywhere, as the broker's plain-message test does), a
  record over the maximum message size or properties over 32,767 bytes. The wait flag says whether
  any item asks to wait for the flush (``WAIT`` missing, or "true"/"1" in any case; the last
  non-empty value counts, as ``find_property`` reads it).
- ``write_batch`` writes the records into a mapped CommitLog file (docs/store-format.md#message-record) exactly as
  ``CommitLog.append`` packs them: the item's properties with trailing separators stripped, then a
  separator and the broker's suffix; the body CRC computed here (CRC-32, slicing by 8, masked to
  int32). It stops before a record that would not leave 8 bytes for the end-of-file filler, and the
  caller rolls to the next file.

Compiled with the dispatcher's helpers (``compiled_dispatch.load`` first); None without numba.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from rocketq.common import byte_kernels
from rocketq.common import record as rec
from rocketq.common.compile_once import CompileOnce
from rocketq.common.message import Property
from rocketq.store import compiled_dispatch

SPECIAL_NAMES: Final = (
    Property.MSG_REGION,
    Property.TRACE_SWITCH,
    Property.CLUSTER,
    Property.DELAY_TIME_LEVEL,
    Property.TRANSACTION_PREPARED,
)
"""Properties whose presence sends a batch down the per-message path (the broker sets or acts on them)."""

ITEM_OVERHEAD: Final = 22  # the fixed part of a batch item: five int32 and the int16 properties length


def _stored_properties_length(b: Any, start: Any, stop: Any, suffix_length: Any) -> Any:
    kept = stop
    while kept > start and b[kept - 1] == PROPERTY_SEPARATOR:
        kept -= 1
    return kept - start + 1 + suffix_length if kept > start else suffix_length


def _ends_with_name(b: Any, start: Any, separator_at: Any, names: Any, name_lengths: Any) -> bool:
    """Whether one of ``names`` ends right before the ``\\x01`` at ``separator_at``."""
    for n in range(len(name_lengths)):
        length = name_lengths[n]
        if separator_at - length < start:
            continue
        same = True
        for k in range(length):
            if b[separator_at - length + k] != names[n, k]:
                same = False
                break
        if same:
            return True
    return False


def _waits(b: Any, value_at: Any, stop: Any) -> Any:
    """1 when the WAIT value at ``value_at`` is "true" or "1" (any case), 0 otherwise, -1 when empty."""
    end = value_at
    while end < stop and b[end] != PROPERTY_SEPARATOR:
        end += 1
    length = end - value_at
    if length == 0:
        return -1
    if length == 1:
        return 1 if b[value_at] == 49 else 0
    if length != 4:
        return 0
    for k in range(4):
        if b[value_at + k] | 32 != TRUE[k]:
            return 0
    return 1


def _measure_batch(
    b: Any,
    topic_length: Any,
    suffix_length: Any,
    max_body: Any,
    max_record: Any,
    names: Any,
    name_lengths: Any,
    sizes: Any,
) -> tuple[Any, Any, Any, Any]:
    size = len(b)
    position = 0
    count = 0
    any_waits = False
    total_size = 0
    largest = 0
    while position < size:
        if size - position < ITEM_OVERHEAD:
            return -1, False, 0, 0
        total = int32_at(b, position)
        body_length = int32_at(b, position + 16)
        body_at = position + 20
        if body_length < 0 or body_length > max_body or body_at + body_length + 2 > size:
            return -1, False, 0, 0
        properties_at = body_at + body_length + 2
        properties_length = (np.int64(b[properties_at - 2]) << 8) | np.int64(b[properties_at - 1])
        end = properties_at + properties_length
        if properties_length >= 32768 or end > size or total != end - position:
            return -1, False, 0, 0
        waits = 1
        k = properties_at
        while k < end:
            byte = b[k]
            if byte >= 128:
                return -1, False, 0, 0
            if byte == NAME_VALUE_SEPARATOR:
                if ends_with_name(b, properties_at, k, names, name_lengths):
                    return -1, False, 0, 0
                wait_at = k - WAIT_LENGTH
                segment_start = wait_at == properties_at or (wait_at > properties_at and b[wait_at - 1] == SEPARATOR)
                if segment_start and ends_with_name(b, properties_at, k, WAIT_NAME, WAIT_NAME_LENGTH):
                    found = waits_value(b, k + 1, end)
                    if found >= 0:
                        waits = found
            k += 1
        stored = stored_properties_length(b, properties_at, end, suffix_length)
        record = RECORD_OVERHEAD + body_length + topic_length + stored
        if stored > MAX_PROPERTIES_LENGTH or record > max_record:
            return -1, False, 0, 0
        any_waits = any_waits or waits == 1
        sizes[count] = record
        total_size += record
        largest = max(largest, record)
        count += 1
        position = end
    return count, any_waits, total_size, largest


def _write_batch(
    b: Any,
    item_at: Any,
    first: Any,
    count: Any,
    sizes: Any,
    out: Any,
    position: Any,
    base: Any,
    topic: Any,
    suffix: Any,
    queue_id: Any,
    first_queue_offset: Any,
    sys_flag: Any,
    born_timestamp: Any,
    born_host: Any,
    store_timestamp: Any,
    store_host: Any,
    reconsume_times: Any,
    prepared_offset: Any,
    physical: Any,
) -> tuple[Any, Any, Any]:
    file_size = len(out)
    i = first
    while i < count:
        record = sizes[i]
        if record + END_FILE_MIN_BLANK_LENGTH > file_size - position:
            break
        flag = int32_at(b, item_at + 12)
        body_length = int32_at(b, item_at + 16)
        body_at = item_at + 20
        properties_at = body_at + body_length + 2
        properties_end = properties_at + ((np.int64(b[properties_at - 2]) << 8) | np.int64(b[properties_at - 1]))
        offset = base + position
        put32(out, position, record)
        put32(out, position + 4, MESSAGE_MAGIC)
        put32(out, position + 8, crc32(b, body_at, body_at + body_length) & 0x7FFFFFFF)
        put32(out, position + 12, queue_id)
        put32(out, position + 16, flag)
        put64(out, position + 20, first_queue_offset + i)
        put64(out, position + 28, offset)
        put32(out, position + 36, sys_flag)
        put64(out, position + 40, born_timestamp)
        copy(out, position + 48, born_host, 0, 8)
        put64(out, position + 56, store_timestamp)
        copy(out, position + 64, store_host, 0, 8)
        put32(out, position + 72, reconsume_times)
        put64(out, position + 76, prepared_offset)
        put32(out, position + 84, body_length)
        p = position + 88
        copy(out, p, b, body_at, body_at + body_length)
        p += body_length
        out[p] = len(topic)
        copy(out, p + 1, topic, 0, len(topic))
        p += 1 + len(topic)
        kept = properties_end
        while kept > properties_at and b[kept - 1] == PROPERTY_SEPARATOR:
            kept -= 1
        stored = kept - properties_at + 1 + len(suffix) if kept > properties_at else len(suffix)
        out[p] = (stored >> 8) & 255
        out[p + 1] = stored & 255
        p += 2
        if kept > properties_at:
            copy(out, p, b, properties_at, kept)
            p += kept - properties_at
            out[p] = PROPERTY_SEPARATOR
            p += 1
        copy(out, p, suffix, 0, len(suffix))
        physical[i] = offset
        position += record
        item_at = properties_end
        i += 1
    return i, item_at, position


# Module-level constants: numba freezes them into the compiled code.
PROPERTY_SEPARATOR = 2
SEPARATOR = PROPERTY_SEPARATOR
NAME_VALUE_SEPARATOR = 1
TRUE = np.frombuffer(b"true", dtype=np.uint8)
WAIT_NAME = np.frombuffer(Property.WAIT_STORE_MSG_OK.encode(), dtype=np.uint8).reshape(1, -1)
WAIT_NAME_LENGTH = np.array([WAIT_NAME.shape[1]], dtype=np.int64)
WAIT_LENGTH = int(WAIT_NAME.shape[1])
RECORD_OVERHEAD = rec.RECORD_OVERHEAD
MAX_PROPERTIES_LENGTH = rec.MAX_PROPERTIES_LENGTH
END_FILE_MIN_BLANK_LENGTH = rec.END_FILE_MIN_BLANK_LENGTH
MESSAGE_MAGIC = rec.MESSAGE_MAGIC
int32_at: Any = None  # the compiled helpers, set by load()
put32: Any = None
put64: Any = None
crc32: Any = None
copy: Any = None
ends_with_name: Any = None
waits_value: Any = None
stored_properties_length: Any = None


def special_names() -> tuple[np.ndarray, np.ndarray]:
    """``SPECIAL_NAMES`` as the rows and lengths ``measure_batch`` takes."""
    encoded = [name.encode() for name in SPECIAL_NAMES]
    rows = np.zeros((len(encoded), max(map(len, encoded))), dtype=np.uint8)
    for row, name in zip(rows, encoded, strict=True):
        row[: len(name)] = np.frombuffer(name, dtype=np.uint8)
    return rows, np.array([len(name) for name in encoded], dtype=np.int64)


def load() -> tuple[Any, Any] | None:
    """(``measure_batch``, ``write_batch``), compiled or loaded from the cache on the first call; None
    without numba or when the dispatcher's kernels did not compile."""
    return _COMPILED.get()


def _compile(numba: Any) -> tuple[Any, Any]:
    global copy, int32_at, put32, put64, crc32, ends_with_name, waits_value, stored_properties_length
    int32_at, put32, put64 = compiled_dispatch.int32_at, compiled_dispatch.put32, compiled_dispatch.put64
    crc32 = numba.njit(inline="always")(byte_kernels.crc32)
    copy = numba.njit(inline="never")(byte_kernels.copy)
    ends_with_name = numba.njit(inline="always")(_ends_with_name)
    waits_value = numba.njit(inline="always")(_waits)
    stored_properties_length = numba.njit(inline="always")(_stored_properties_length)
    measure = numba.njit(cache=True)(_measure_batch)
    write = numba.njit(cache=True)(_write_batch)
    names, lengths = special_names()
    nothing = np.frombuffer(b"", dtype=np.uint8)  # read-only, as the bytes the broker passes
    measure(nothing, 1, 0, 1, 1, names, lengths, np.zeros(1, dtype=np.int64))
    host = np.frombuffer(bytes(8), dtype=np.uint8)
    write(
        nothing, 0, 0, 0, np.zeros(0, dtype=np.int64), np.zeros(8, dtype=np.uint8), 0, 0, nothing, nothing,
        0, 0, 0, 0, host, 0, host, 0, 0, np.zeros(0, dtype=np.int64),
    )  # fmt: skip
    return measure, write


_COMPILED = CompileOnce(
    "the batch append", "batches are decoded in Python", _compile, ready=lambda: compiled_dispatch.load() is not None
)
