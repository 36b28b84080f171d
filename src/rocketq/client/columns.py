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
    records_batch(parts: Sequence[tuple[buffer, positions | None]], *, broker_name: str,
                  include_properties: bool = False, check_crc: bool = False) -> pyarrow.RecordBatch
    columns_batch(columns: RecordColumns | Sequence[RecordColumns], *, broker_name: str,
                  include_properties: bool = False) -> pyarrow.RecordBatch   # records already scanned
    arrow_message_schema(include_properties: bool = False) -> pyarrow.Schema

All three build the batch the same way: one pass of ``rocketq.common.record_arrow``'s kernel per
buffer writes every column's Arrow buffers; ``records_batch`` makes one batch of several buffers (a
Spark task's pulls) without joining them first.

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
``reconsume_times`` and ``properties``); the tests check it on generated messages. Records holding
over 2 GiB of bodies, topics and properties in one batch are refused (a column could pass Arrow's
2 GiB): decode fewer records at a time.

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

from rocketq.common.record import RecordFormatError
from rocketq.common.record_arrow import (
    BODY,
    KEYS,
    MSG_ID,
    NARROW,
    TAGS,
    TOPIC,
    WIDE,
    FilledColumns,
    PartProperties,
    fill_columns,
)
from rocketq.common.record_columns import POSITION, RecordColumns, kernels

PROPERTIES_COLUMN: Final = "properties"
_TIMESTAMP: Final = pa.timestamp("us", tz="UTC")
_MAX_COLUMN_BYTES: Final = 2**31 - 1  # Arrow's string and binary offsets are int32

__all__ = ["arrow_message_schema", "columns_batch", "message_batch", "records_batch"]


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
    return records_batch([(buffer, positions)], broker_name=broker_name, include_properties=include_properties)


def records_batch(
    parts: Sequence[tuple[Any, np.ndarray | Sequence[int] | None]],
    *,
    broker_name: str,
    include_properties: bool = False,
    check_crc: bool = False,
) -> pa.RecordBatch:
    """One record batch of the records of several buffers, in order: each part is a buffer and where its
    wanted records start (None: records one after the other from its first byte), as ``message_batch``
    takes them. Each value is copied once, from its own buffer, straight into the batch.

    Raises:
        RecordFormatError: A record is not sound (its body CRC too, with ``check_crc``), a compressed
            body does not inflate, or a column could pass 2 GiB; the error names the record's position
            in its buffer.
    """
    filled = fill_columns(parts, check_crc=check_crc, include_properties=include_properties, allocate=arrow_memory)
    return filled_batch(filled, broker_name=broker_name, include_properties=include_properties)


def arrow_memory(size: int) -> np.ndarray:
    """Room from Arrow's memory pool, which keeps what the batches before freed (the system's fresh
    pages cost a page fault each: 0.03-0.15 µs per message of a batch, measured at 100 B and 1 KiB)."""
    return np.frombuffer(pa.allocate_buffer(size), dtype=np.uint8)


def columns_batch(
    columns: RecordColumns | Sequence[RecordColumns], *, broker_name: str, include_properties: bool = False
) -> pa.RecordBatch:
    """``records_batch`` of records already scanned (``rocketq.common.record_columns.scan_records``),
    one part per scan: the records are read again where the scans found them.

    Raises:
        RecordFormatError: A compressed body does not inflate, or a column could pass 2 GiB.
    """
    scans = [columns] if isinstance(columns, RecordColumns) else columns
    parts = [(scan.data, scan.fields[POSITION]) for scan in scans]
    return records_batch(parts, broker_name=broker_name, include_properties=include_properties)


def filled_batch(filled: FilledColumns, *, broker_name: str, include_properties: bool = False) -> pa.RecordBatch:
    """The record batch of columns the one decode filled (``rocketq.common.record_arrow.fill_columns``,
    best with ``allocate=arrow_memory``); the buffers become the batch's without a copy, compressed
    bodies are inflated.

    Raises:
        RecordFormatError: A compressed body does not inflate.
    """
    count = filled.count

    def variable(column: int, kind: pa.DataType, validity: int | None = None) -> pa.Array:
        nulls = 0 if validity is None else filled.null_counts[validity]
        bitmap = pa.py_buffer(filled.validity[validity]) if validity is not None and nulls else None
        buffers = [bitmap, pa.py_buffer(filled.offsets[column]), pa.py_buffer(filled.values[column])]
        return pa.Array.from_buffers(kind, count, buffers, null_count=nulls)

    def fixed(values: np.ndarray, kind: pa.DataType) -> pa.Array:
        return pa.Array.from_buffers(kind, count, [None, pa.py_buffer(values)])

    arrays = [
        variable(TOPIC, pa.string()),
        _constant(broker_name, count),
        fixed(filled.narrow[NARROW.index("queueId")], pa.int32()),
        fixed(filled.wide[WIDE.index("queueOffset")], pa.int64()),
        variable(MSG_ID, pa.string()),
        variable(TAGS, pa.string(), 0),
        variable(KEYS, pa.string(), 1),
        _inflated(filled) if len(filled.compressed[0]) else variable(BODY, pa.binary()),
        fixed(filled.wide[WIDE.index("bornTimestamp")], _TIMESTAMP),
        fixed(filled.wide[WIDE.index("storeTimestamp")], _TIMESTAMP),
        fixed(filled.narrow[NARROW.index("reconsumeTimes")], pa.int32()),
    ]
    if include_properties:
        properties = [_properties(part) for part in filled.properties]
        if len(properties) == 1:
            arrays.append(properties[0])
        else:  # (no part at all: an empty column)
            kind = arrow_message_schema(True).field(PROPERTIES_COLUMN).type
            arrays.append(pa.concat_arrays(properties) if properties else pa.array([], type=kind))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_message_schema(include_properties))


def _offsets(lengths: np.ndarray, what: str) -> np.ndarray:
    """Arrow's int32 offsets for values of these lengths (n + 1 of them, from 0)."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > _MAX_COLUMN_BYTES:
        raise RecordFormatError(0, f"{what} would hold {offsets[-1]} bytes, over 2 GiB: decode fewer records")
    return offsets


def _buffer_spans(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, kind: pa.DataType) -> pa.Array:
    """The bytes at the (``starts``, ``lengths``) spans of ``data`` as a string or binary array."""
    offsets = _offsets(lengths, "a column")
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    kernels().gather(data, starts, lengths, offsets, out)
    return pa.Array.from_buffers(kind, len(starts), [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(out)])


def _constant(text: str, count: int) -> pa.Array:
    raw = np.frombuffer(text.encode(), dtype=np.uint8)
    offsets = np.arange(count + 1, dtype=np.int64) * len(raw)
    if offsets[-1] > _MAX_COLUMN_BYTES:
        raise RecordFormatError(0, "the brokerName column would pass 2 GiB: decode fewer records")
    buffers = [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(np.tile(raw, count))]
    return pa.Array.from_buffers(pa.string(), count, buffers)


def _inflated(filled: FilledColumns) -> pa.Array:
    """The body column with its compressed bodies (rare: producers compress bodies over 4 KiB)
    inflated, one at a time in Python; the bodies between them are moved in slices."""
    stored, values = filled.offsets[BODY].astype(np.int64), filled.values[BODY]
    lengths = np.diff(stored)
    bodies = []
    for row, position in filled.compressed.T.tolist():
        try:
            bodies.append(zlib.decompress(values[stored[row] : stored[row + 1]].data))
        except zlib.error as exc:
            raise RecordFormatError(position, f"compressed body does not inflate: {exc}") from exc
        lengths[row] = len(bodies[-1])
    offsets = _offsets(lengths, "the body column")
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    kept = 0  # the first row not yet moved
    for row, body in zip(filled.compressed[0].tolist(), bodies, strict=True):
        out[offsets[kept] : offsets[row]] = values[stored[kept] : stored[row]]
        out[offsets[row] : offsets[row + 1]] = np.frombuffer(body, dtype=np.uint8)
        kept = row + 1
    out[offsets[kept] :] = values[stored[kept] :]
    return pa.Array.from_buffers(
        pa.binary(), filled.count, [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(out)]
    )


def _properties(part: PartProperties) -> pa.Array:
    data, spans = part.data, part.spans
    count = spans.shape[1]
    entries_at = np.empty((int(spans[2].sum()), 4), dtype=np.int64)
    ends = np.empty(count, dtype=np.int64)
    kernels().property_entries(data, spans[0], spans[1], ends, entries_at)
    used = int(ends[-1]) if count else 0
    entries_at = entries_at[:used]
    columns = [np.ascontiguousarray(entries_at[:, k]) for k in range(4)]
    names = _buffer_spans(data, columns[0], columns[1], pa.string())
    values = _buffer_spans(data, columns[2], columns[3], pa.string())
    kind = arrow_message_schema(True).field(PROPERTIES_COLUMN).type
    entries = pa.StructArray.from_arrays([names, values], fields=[kind.key_field, kind.item_field])
    offsets = np.zeros(count + 1, dtype=np.int32)
    offsets[1:] = ends
    return pa.Array.from_buffers(kind, count, [None, pa.py_buffer(offsets)], children=[entries])
