"""Stored records decoded into Arrow record batches, one column at a time: no Python object per message.

This is the columnar twin of ``decode_messages``: where that builds a ``MessageExt`` per message for a
consumer, ``message_batch`` turns a whole buffer of stored records into one ``pyarrow.RecordBatch``
with numpy arrays and compiled kernels (``rocketq.common.record_columns``), for analytics (the Spark
data sources). It needs ``pyarrow`` (the ``rocketq[spark]`` extra); ``import rocketq.client`` does not
import this module.

The buffer is any of:

- a PULL_MESSAGE, VIEW_MESSAGE or QUERY_MESSAGE body: records one after the other;
- a CommitLog file (or any bytes holding records) with ``positions``, the start of each wanted record in
  the buffer, in the order the rows should have (for example a ConsumeQueue range's CommitLog offsets
  minus the file's first offset).

API::

    message_batch(buffer, *, broker_name: str, include_properties: bool = False,
                  positions: numpy.ndarray | None = None) -> pyarrow.RecordBatch
    columns_batch(columns: RecordColumns | Sequence[RecordColumns], *, broker_name: str,
                  include_properties: bool = False) -> pyarrow.RecordBatch   # records already scanned
    arrow_message_schema(include_properties: bool = False) -> pyarrow.Schema

The batch's schema is ``arrow_message_schema(include_properties)``, one row per message:

=================  =====================  ==========================================================
column             Arrow type             value
=================  =====================  ==========================================================
topic              string                 the record's topic
brokerName         string                 ``broker_name`` (records do not carry it)
queueId            int32                  the record's queue id
queueOffset        int64                  its ConsumeQueue offset
msgId              string                 the UNIQ_KEY property; without one, the offset message id
                                          (store host and CommitLog offset, 32 hex digits)
tags               string, nullable       the TAGS property; null without one
keys               string, nullable       the KEYS property as sent (keys separated by spaces); null
                                          without one
body               binary                 the body, inflated when the record says it is compressed
bornTimestamp      timestamp[us, UTC]     when the producer made the message (ms precision)
storeTimestamp     timestamp[us, UTC]     when the broker stored it
reconsumeTimes     int32                  deliveries before this one (retry topics)
properties         map<string, string>    only with ``include_properties``: every property as stored,
                                          TAGS, KEYS and UNIQ_KEY included
=================  =====================  ==========================================================

Values equal what ``decode_messages`` gives for the same records (``MessageExt.topic``, ``queue_id``,
``queue_offset``, ``msg_id``, ``tags``, ``properties.get("KEYS")``, ``body``, the timestamps,
``reconsume_times`` and ``properties``); the tests check it on generated messages. A body or a column
over 2 GiB in one batch is refused: decode fewer records at a time.

Raises ``RecordFormatError`` (a ``ValueError``) naming the position of the first record that is not
sound: cut short, a wrong magic or size, lengths that do not add up, a topic or properties that are not
UTF-8, hosts in the IPv6 layout, or a compressed body that does not inflate.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import pyarrow as pa

from rocketq.common.record import RecordFormatError, SysFlag
from rocketq.common.record_columns import (
    BODY_AT,
    BODY_LENGTH,
    BORN_TIMESTAMP,
    KEYS_AT,
    KEYS_LENGTH,
    POSITION,
    PROPERTIES_AT,
    PROPERTIES_LENGTH,
    PROPERTY_COUNT,
    QUEUE_ID,
    QUEUE_OFFSET,
    RECONSUME_TIMES,
    STORE_TIMESTAMP,
    SYS_FLAG,
    TAGS_AT,
    TAGS_LENGTH,
    TOPIC_AT,
    TOPIC_LENGTH,
    UNIQ_AT,
    UNIQ_LENGTH,
    RecordColumns,
    kernels,
    scan_records,
)

PROPERTIES_COLUMN: Final = "properties"
_TIMESTAMP: Final = pa.timestamp("us", tz="UTC")
_MAX_COLUMN_BYTES: Final = 2**31 - 1  # Arrow's string and binary offsets are int32
_OFFSET_ID_LENGTH: Final = 32

__all__ = ["arrow_message_schema", "columns_batch", "message_batch"]


@functools.cache
def arrow_message_schema(include_properties: bool = False) -> pa.Schema:
    """The Arrow schema of the batches: the row schema of the Spark data sources as Spark converts it
    (``rocketq.spark.schema.message_schema``; the Spark tests check that the two agree)."""
    fields = [
        pa.field("topic", pa.string(), nullable=False),
        pa.field("brokerName", pa.string(), nullable=False),
        pa.field("queueId", pa.int32(), nullable=False),
        pa.field("queueOffset", pa.int64(), nullable=False),
        pa.field("msgId", pa.string(), nullable=False),
        pa.field("tags", pa.string(), nullable=True),
        pa.field("keys", pa.string(), nullable=True),
        pa.field("body", pa.binary(), nullable=False),
        pa.field("bornTimestamp", _TIMESTAMP, nullable=False),
        pa.field("storeTimestamp", _TIMESTAMP, nullable=False),
        pa.field("reconsumeTimes", pa.int32(), nullable=False),
    ]
    if include_properties:
        entries = pa.map_(pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string(), nullable=False))
        fields.append(pa.field(PROPERTIES_COLUMN, entries, nullable=False))
    return pa.schema(fields)


def message_batch(
    buffer: Any,
    *,
    broker_name: str,
    include_properties: bool = False,
    positions: np.ndarray | None = None,
) -> pa.RecordBatch:
    """The records of ``buffer`` as one record batch (see the module docstring).

    Args:
        buffer: bytes, bytearray, memoryview, mmap or uint8 array holding the records; not copied, and not
            referenced by the batch.
        broker_name: the ``brokerName`` column's value.
        include_properties: add the ``properties`` map column.
        positions: where each record starts in ``buffer`` (integers); None when ``buffer`` is records one
            after the other from its first byte.

    Raises:
        RecordFormatError: A record is not sound; the error names its position in ``buffer``.
    """
    return columns_batch(
        scan_records(buffer, positions), broker_name=broker_name, include_properties=include_properties
    )


def columns_batch(
    columns: RecordColumns | Sequence[RecordColumns], *, broker_name: str, include_properties: bool = False
) -> pa.RecordBatch:
    """``message_batch`` for records already scanned (``rocketq.common.record_columns.scan_records``).
    A sequence of scans (of several buffers, such as one per pull) makes one batch of their records in
    order, each value copied once from its own buffer: the buffers are not joined first.

    Raises:
        RecordFormatError: A compressed body does not inflate, or a column would pass 2 GiB.
    """
    parts = [columns] if isinstance(columns, RecordColumns) else list(columns)
    count = sum(len(part) for part in parts)
    arrays = [
        _spans(parts, TOPIC_AT, TOPIC_LENGTH, pa.string()),
        _constant(broker_name, count),
        pa.array(_field(parts, QUEUE_ID).astype(np.int32), type=pa.int32()),
        pa.array(_field(parts, QUEUE_OFFSET), type=pa.int64()),
        _message_ids(parts),
        _spans(parts, TAGS_AT, TAGS_LENGTH, pa.string()),
        _spans(parts, KEYS_AT, KEYS_LENGTH, pa.string()),
        _bodies(parts),
        _timestamps(_field(parts, BORN_TIMESTAMP)),
        _timestamps(_field(parts, STORE_TIMESTAMP)),
        pa.array(_field(parts, RECONSUME_TIMES).astype(np.int32), type=pa.int32()),
    ]
    if include_properties:
        arrays.append(_properties(parts[0]) if len(parts) == 1 else pa.concat_arrays([_properties(p) for p in parts]))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_message_schema(include_properties))


def _field(parts: list[RecordColumns], field: int) -> np.ndarray:
    """One of ``FIELDS`` over all the parts' records."""
    if len(parts) == 1:
        values: np.ndarray = parts[0].fields[field]
        return values
    return np.concatenate([part.fields[field] for part in parts])


def _offsets(lengths: np.ndarray, what: str) -> np.ndarray:
    """Arrow's int32 offsets for values of these lengths (n + 1 of them, from 0)."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > _MAX_COLUMN_BYTES:
        raise RecordFormatError(0, f"{what} would hold {offsets[-1]} bytes, over 2 GiB: decode fewer records")
    return offsets


def _spans(parts: list[RecordColumns], at: int, length: int, kind: pa.DataType) -> pa.Array:
    """The bytes at the parts' (``fields[at]``, ``fields[length]``) spans, in order, as a string or
    binary array; a start below 0 is a null."""
    if len(parts) == 1:
        return _buffer_spans(parts[0].data, parts[0].fields[at], parts[0].fields[length], kind)
    starts = [part.fields[at] for part in parts]
    present = _field(parts, at) >= 0
    lengths = np.where(present, _field(parts, length), 0)
    offsets = _offsets(lengths, "a column")
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    gather, first = kernels().gather, 0
    for part, start in zip(parts, starts, strict=True):
        last = first + len(start)
        if offsets[last] > offsets[first]:  # (a column of nulls, such as tags that nobody set, has nothing to copy)
            gather(part.data, start, lengths[first:last], offsets[first : last + 1], out)
        first = last
    return _variable(kind, offsets, out, present)


def _buffer_spans(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, kind: pa.DataType) -> pa.Array:
    """``_spans`` of one buffer, the spans given."""
    present = starts >= 0
    lengths = np.where(present, lengths, 0)
    offsets = _offsets(lengths, "a column")
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    kernels().gather(data, starts, lengths, offsets, out)
    return _variable(kind, offsets, out, present)


def _variable(kind: pa.DataType, offsets: np.ndarray, values: np.ndarray, present: np.ndarray | None) -> pa.Array:
    count = len(offsets) - 1
    nulls = 0 if present is None else count - int(np.count_nonzero(present))
    validity = None if nulls == 0 or present is None else pa.py_buffer(np.packbits(present, bitorder="little"))
    return pa.Array.from_buffers(
        kind,
        count,
        [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(values)],
        null_count=nulls,
    )


def _constant(text: str, count: int) -> pa.Array:
    raw = np.frombuffer(text.encode(), dtype=np.uint8)
    offsets = np.arange(count + 1, dtype=np.int64) * len(raw)
    if offsets[-1] > _MAX_COLUMN_BYTES:
        raise RecordFormatError(0, "the brokerName column would pass 2 GiB: decode fewer records")
    return _variable(pa.string(), offsets, np.tile(raw, count), None)


def _timestamps(milliseconds: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(_TIMESTAMP, len(milliseconds), [None, pa.py_buffer(milliseconds * 1000)])


def _message_ids(parts: list[RecordColumns]) -> pa.Array:
    lengths = np.where(_field(parts, UNIQ_AT) >= 0, _field(parts, UNIQ_LENGTH), _OFFSET_ID_LENGTH)
    offsets = _offsets(lengths, "the msgId column")
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    message_ids, first = kernels().message_ids, 0
    for part in parts:
        own, last = part.fields, first + len(part)
        message_ids(part.data, own[POSITION], own[UNIQ_AT], own[UNIQ_LENGTH], offsets[first : last + 1], out)
        first = last
    return _variable(pa.string(), offsets, out, None)


def _bodies(parts: list[RecordColumns]) -> pa.Array:
    """The body column; compressed bodies (rare: producers compress bodies over 4 KiB) are inflated in
    Python, one at a time, and the rest copied by the kernel."""
    lengths = _field(parts, BODY_LENGTH)
    inflated: dict[int, bytes] = {}  # by row
    first = 0
    for part in parts:
        for index in np.flatnonzero(part.fields[SYS_FLAG] & SysFlag.COMPRESSED).tolist():
            at, length = int(part.fields[BODY_AT, index]), int(part.fields[BODY_LENGTH, index])
            try:
                inflated[first + index] = zlib.decompress(part.data[at : at + length].data)
            except zlib.error as exc:
                position = int(part.fields[POSITION, index])
                raise RecordFormatError(position, f"compressed body does not inflate: {exc}") from exc
        first += len(part)
    if inflated:
        lengths = lengths.copy()  # (a row of the only part's fields)
        for row, body in inflated.items():
            lengths[row] = len(body)
    offsets = _offsets(lengths, "the body column")
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    gather, first = kernels().gather, 0
    for part in parts:
        last = first + len(part)
        starts = part.fields[BODY_AT]
        if inflated:
            starts = starts.copy()
            starts[[row - first for row in inflated if first <= row < last]] = -1  # copied below
        gather(part.data, starts, lengths[first:last], offsets[first : last + 1], out)
        first = last
    for row, body in inflated.items():
        out[offsets[row] : offsets[row + 1]] = np.frombuffer(body, dtype=np.uint8)
    return _variable(pa.binary(), offsets, out, None)


def _properties(columns: RecordColumns) -> pa.Array:
    fields, data = columns.fields, columns.data
    spans = np.empty((int(fields[PROPERTY_COUNT].sum()), 4), dtype=np.int64)
    ends = np.empty(len(columns), dtype=np.int64)
    kernels().property_entries(data, fields[PROPERTIES_AT], fields[PROPERTIES_LENGTH], ends, spans)
    used = int(ends[-1]) if len(ends) else 0
    spans = spans[:used]
    names = _buffer_spans(data, np.ascontiguousarray(spans[:, 0]), np.ascontiguousarray(spans[:, 1]), pa.string())
    values = _buffer_spans(data, np.ascontiguousarray(spans[:, 2]), np.ascontiguousarray(spans[:, 3]), pa.string())
    kind = arrow_message_schema(True).field(PROPERTIES_COLUMN).type
    entries = pa.StructArray.from_arrays([names, values], fields=[kind.key_field, kind.item_field])
    offsets = np.zeros(len(columns) + 1, dtype=np.int32)
    offsets[1:] = ends
    return pa.Array.from_buffers(kind, len(columns), [None, pa.py_buffer(offsets)], children=[entries])
