"""The dispatcher's per-record work compiled with numba: records to columns, index keys to hashes.

``scan_columns`` walks consecutive stored records of one mapped file (protocol-4x.md §4.1) and writes,
per record, the ``ROW`` columns the ConsumeQueues need (the topic as an index into a table of known
topic names, the TAGS hash code as Java's ``String.hashCode``), and, per index key, the key's hash as
the IndexFile stores it (hashCode of ``topic#key``, made non-negative) with the number of its record,
in the order ``IndexService.build`` indexes them: each KEYS entry, then UNIQ_KEY. Property lookups
follow ``find_property``: a name counts at the start of a ``\\x02``-separated segment, the last
non-empty value wins.

It stops *before* a record the Python dispatcher must parse, which ``CommitLog.scan`` then does: a
BLANK filler or unknown magic, a header that does not fit before the file's end, spans that do not fit
in their record, hosts in the IPv6 layout, the delay topic (whose tag code is a delivery time), a
topic that is empty, longer than 127 bytes or not ASCII, TAGS, KEYS or UNIQ_KEY that are not ASCII
(hashed over UTF-16 units), more than ``MAX_KEYS_PER_RECORD`` keys; and before a record whose topic
is not in the table yet (``NEW_TOPIC``), so the caller can add it and go on.

Compiled with ``nogil=True`` and ``cache=True`` (about 5 s the first time, then loaded from the cache
next to this module). ``load`` imports numba and compiles or loads the scan when the first store is
made, so importing rocketq stays cheap and no dispatch waits for a compiler. Without numba (no wheel
for this Python) or with ``ROCKETQ_COMPILED_DISPATCH=0``, ``load`` returns None and the dispatcher
stays in Python.
"""

from __future__ import annotations

import os
from typing import Any, Final

import numpy as np

from rocketq.common import byte_kernels
from rocketq.common import record as rec
from rocketq.common.compile_once import CompileOnce
from rocketq.common.message import SCHEDULE_TOPIC

ROW: Final = (
    "physical_offset",
    "total_size",
    "queue_id",
    "queue_offset",
    "sys_flag",
    "store_timestamp",
    "topic",
    "tags_code",
)
PHYSICAL, SIZE, QUEUE_ID, QUEUE_OFFSET, SYS_FLAG, STORE_TIMESTAMP, TOPIC, TAGS_CODE = range(len(ROW))
MAX_KEYS_PER_RECORD: Final = 16
MAX_TOPIC_LENGTH: Final = 127

DONE: Final = 0  # the end, or max_records
PYTHON: Final = 1  # the next record is one for the Python dispatcher
NEW_TOPIC: Final = 2  # the next record's topic is not in the table

_MIN_INT: Final = -(2**31)


def _hash_span(b: Any, start: Any, stop: Any, h: Any) -> Any:
    for k in range(start, stop):
        h = (h * 31 + np.int64(b[k])) & 0xFFFFFFFF
    return h


def _index_hash(h: Any) -> Any:
    signed = h - (np.int64(1) << 32) if h >= (np.int64(1) << 31) else h
    if signed == _MIN_INT:
        return np.int64(0)
    return -signed if signed < 0 else signed


def _ascii(b: Any, start: Any, stop: Any) -> bool:
    for k in range(start, stop):  # noqa: SIM110 (numba compiles loops, not generators)
        if b[k] >= 128:
            return False
    return True


def _scan_columns(
    b: Any,
    position: Any,
    end: Any,
    max_records: Any,
    topics: Any,
    topic_lengths: Any,
    topic_count: Any,
    rows: Any,
    key_hashes: Any,
    key_records: Any,
    first_record: Any,
) -> tuple[Any, Any, Any, Any]:
    file_size = len(b)
    count = 0
    keys = 0
    while position < end and count < max_records:
        if file_size - position < HEAD_SIZE:
            return count, position, keys, PYTHON
        total = int32_at(b, position)
        if int32_at(b, position + 4) != MESSAGE_MAGIC or total < HEAD_SIZE or position + total > end:
            return count, position, keys, PYTHON
        sys_flag = int32_at(b, position + 36)
        if sys_flag & V6_HOSTS:
            return count, position, keys, PYTHON
        record_end = position + total
        topic_at = position + HEAD_SIZE + int32_at(b, position + 84)
        if topic_at < position + HEAD_SIZE or topic_at + 1 > record_end:
            return count, position, keys, PYTHON
        topic_length = np.int64(b[topic_at])
        if topic_length == 0 or topic_length > MAX_TOPIC_LENGTH:  # not a name rocketq writes: Python decides
            return count, position, keys, PYTHON
        topic_start = topic_at + 1
        properties_at = topic_start + topic_length + 2
        if properties_at > record_end:
            return count, position, keys, PYTHON
        properties_end = properties_at + ((np.int64(b[properties_at - 2]) << 8) | np.int64(b[properties_at - 1]))
        if properties_end > record_end or not all_ascii(b, topic_start, topic_start + topic_length):
            return count, position, keys, PYTHON
        if topic_length == len(SCHEDULE) and starts_with(b, topic_start, record_end, SCHEDULE):
            return count, position, keys, PYTHON
        topic = -1
        for t in range(topic_count):
            if topic_lengths[t] == topic_length and starts_with(b, topic_start, record_end, topics[t, :topic_length]):
                topic = t
                break
        if topic < 0:
            return count, position, keys, NEW_TOPIC
        tags_code = np.int64(0)
        keys_at = keys_stop = uniq_at = uniq_stop = np.int64(0)
        ascii_tags = True
        segment = properties_at
        while segment < properties_end:
            stop = segment
            while stop < properties_end and b[stop] != 2:
                stop += 1
            if starts_with(b, segment, stop, TAGS) and stop > segment + len(TAGS):
                ascii_tags = all_ascii(b, segment + len(TAGS), stop)
                h = hash_span(b, segment + len(TAGS), stop, np.int64(0))
                tags_code = h - (np.int64(1) << 32) if h >= (np.int64(1) << 31) else h
            elif starts_with(b, segment, stop, KEYS) and stop > segment + len(KEYS):
                keys_at, keys_stop = segment + len(KEYS), stop
            elif starts_with(b, segment, stop, UNIQ) and stop > segment + len(UNIQ):
                uniq_at, uniq_stop = segment + len(UNIQ), stop
            segment = stop + 1
        if not (ascii_tags and all_ascii(b, keys_at, keys_stop) and all_ascii(b, uniq_at, uniq_stop)):
            return count, position, keys, PYTHON
        prefix = hash_span(b, topic_start, topic_start + topic_length, np.int64(0))
        prefix = (prefix * 31 + 35) & 0xFFFFFFFF  # '#'
        record_keys = 0
        token = keys_at
        while token < keys_stop:
            token_end = token
            while token_end < keys_stop and b[token_end] != 32:  # KEYS are separated by spaces
                token_end += 1
            if token_end > token:
                if record_keys == MAX_KEYS_PER_RECORD or keys + record_keys >= len(key_hashes):
                    return count, position, keys, PYTHON
                key_hashes[keys + record_keys] = index_hash(hash_span(b, token, token_end, prefix))
                key_records[keys + record_keys] = first_record + count
                record_keys += 1
            token = token_end + 1
        if uniq_stop > uniq_at:
            if keys + record_keys >= len(key_hashes):
                return count, position, keys, PYTHON
            key_hashes[keys + record_keys] = index_hash(hash_span(b, uniq_at, uniq_stop, prefix))
            key_records[keys + record_keys] = first_record + count
            record_keys += 1
        keys += record_keys
        row = rows[count]
        row[0] = int64_at(b, position + 28)
        row[1] = total
        row[2] = int32_at(b, position + 12)
        row[3] = int64_at(b, position + 20)
        row[4] = sys_flag
        row[5] = int64_at(b, position + 56)
        row[6] = topic
        row[7] = tags_code
        count += 1
        position = record_end
    return count, position, keys, DONE


def _put_index_entries(
    b: Any,
    slots_at: Any,
    entries_at: Any,
    slot_count: Any,
    first: Any,
    hashes: Any,
    physical: Any,
    stamps: Any,
    begin_timestamp: Any,
) -> Any:
    """``IndexFile._put_scalar``'s rules, compiled: entries numbered from ``first``, each chained to the
    newest earlier entry of its slot; a slot value that is not an earlier entry of this file (<= 0, or
    >= ``first``: left by a torn write) counts as empty. Returns how many slots were empty."""
    count = len(hashes)
    for i in range(count):  # first pass: forget slot values no entry of this file wrote
        at = slots_at + (hashes[i] % slot_count) * 4
        held = int32_at(b, at)
        if held >= first:
            put32(b, at, 0)
    new_slots = 0
    number = first
    for i in range(count):
        at = slots_at + (hashes[i] % slot_count) * 4
        held = int32_at(b, at)
        if held <= 0:
            held = 0
            new_slots += 1
        diff = (stamps[i] - begin_timestamp) // 1000
        diff = min(max(diff, 0), 0x7FFFFFFF)
        entry = entries_at + number * 20
        put32(b, entry, hashes[i])
        put64(b, entry + 4, physical[i])
        put32(b, entry + 12, diff)
        put32(b, entry + 16, held)
        put32(b, at, number)
        number += 1
    return new_slots


RUN: Final = ("start", "end", "topic", "queue_id", "queue_offset", "end_physical")
"""A run of ``group_entries``: entries [start, end) of one queue with consecutive queue offsets from
``queue_offset``; ``end_physical`` is where the run's last record ends in the CommitLog."""


def _group_entries(rows: Any, entries: Any, runs: Any) -> Any:
    """ConsumeQueue entries (20 bytes, big-endian) of the rows a queue takes (not prepared or rolled
    back transactions), grouped by queue in log order, and their runs (``RUN``); returns the run count."""
    n = len(rows)
    keys = np.empty(n, dtype=np.int64)
    picked = np.empty(n, dtype=np.int64)
    m = 0
    for i in range(n):
        transaction = rows[i, SYS_FLAG] & TRANSACTION_MASK
        if transaction != TRANSACTION_PREPARED and transaction != TRANSACTION_ROLLBACK:
            keys[m] = (rows[i, TOPIC] << 32) | rows[i, QUEUE_ID]
            picked[m] = i
            m += 1
    order = np.argsort(keys[:m], kind="mergesort")  # stable: each queue's rows stay in log order
    count = 0
    previous_key = np.int64(-1)
    previous_offset = np.int64(-2)
    for j in range(m):
        i = picked[order[j]]
        key = keys[order[j]]
        queue_offset = rows[i, QUEUE_OFFSET]
        if j == 0 or key != previous_key or queue_offset != previous_offset + 1:
            if count:
                runs[count - 1, 1] = j
            runs[count, 0] = j
            runs[count, 2] = rows[i, TOPIC]
            runs[count, 3] = rows[i, QUEUE_ID]
            runs[count, 4] = queue_offset
            count += 1
        physical = rows[i, PHYSICAL]
        put64(entries, j * 20, physical)
        put32(entries, j * 20 + 8, rows[i, SIZE])
        put64(entries, j * 20 + 12, rows[i, TAGS_CODE])
        runs[count - 1, 5] = physical + rows[i, SIZE]
        previous_key = key
        previous_offset = queue_offset
    if count:
        runs[count - 1, 1] = m
    return count


def _put32(b: Any, p: Any, v: Any) -> None:
    b[p] = (v >> 24) & 255
    b[p + 1] = (v >> 16) & 255
    b[p + 2] = (v >> 8) & 255
    b[p + 3] = v & 255


def _put64(b: Any, p: Any, v: Any) -> None:
    for k in range(8):
        b[p + k] = (v >> (56 - 8 * k)) & 255


_DISABLED = os.environ.get("ROCKETQ_COMPILED_DISPATCH", "1") == "0"
# Module-level constants: numba freezes them into the compiled code (closures would defeat the cache).
HEAD_SIZE = rec.HEAD_SIZE
MESSAGE_MAGIC = rec.MESSAGE_MAGIC
V6_HOSTS = int(rec.SysFlag.BORNHOST_V6 | rec.SysFlag.STOREHOST_V6)
TAGS = np.frombuffer(b"TAGS\x01", dtype=np.uint8)
KEYS = np.frombuffer(b"KEYS\x01", dtype=np.uint8)
UNIQ = np.frombuffer(b"UNIQ_KEY\x01", dtype=np.uint8)
SCHEDULE = np.frombuffer(SCHEDULE_TOPIC.encode(), dtype=np.uint8)
TRANSACTION_MASK = int(rec.SysFlag.TRANSACTION_MASK)
TRANSACTION_PREPARED = int(rec.SysFlag.TRANSACTION_PREPARED_TYPE)
TRANSACTION_ROLLBACK = int(rec.SysFlag.TRANSACTION_ROLLBACK_TYPE)
int32_at: Any = None  # the compiled helpers, set by load()
int64_at: Any = None
starts_with: Any = None
hash_span: Any = None
index_hash: Any = None
all_ascii: Any = None
put32: Any = None
put64: Any = None
_scan: Any = None
_index_put: Any = None
_group: Any = None


class TopicTable:
    """The topic names the compiled scan recognises, as fixed-width byte rows (grown on demand)."""

    def __init__(self, capacity: int = 64) -> None:
        self.bytes = np.zeros((capacity, MAX_TOPIC_LENGTH + 1), dtype=np.uint8)
        self.lengths = np.zeros(capacity, dtype=np.int64)
        self.names: list[str] = []

    def add(self, raw: bytes) -> int:
        if len(self.names) == len(self.lengths):
            grown = TopicTable(2 * len(self.lengths))
            grown.bytes[: len(self.names)] = self.bytes
            grown.lengths[: len(self.names)] = self.lengths
            self.bytes, self.lengths = grown.bytes, grown.lengths
        index = len(self.names)
        self.bytes[index, : len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        self.lengths[index] = len(raw)
        self.names.append(raw.decode())
        return index


def load() -> Any:
    """The compiled ``scan_columns`` (see the module docstring; arguments as ``CommitLog.scan_columns``
    passes them), compiled or loaded from the cache on the first call; None without numba."""
    return _COMPILED.get()


def _compile(numba: Any) -> Any:
    global int32_at, int64_at, starts_with, hash_span, index_hash, all_ascii, put32, put64
    global _scan, _index_put, _group
    int32_at = numba.njit(inline="always")(byte_kernels.int32_at)
    int64_at = numba.njit(inline="always")(byte_kernels.int64_at)
    starts_with = numba.njit(inline="always")(byte_kernels.starts_with)
    hash_span = numba.njit(inline="always")(_hash_span)
    index_hash = numba.njit(inline="always")(_index_hash)
    all_ascii = numba.njit(inline="always")(_ascii)
    put32 = numba.njit(inline="always")(_put32)
    put64 = numba.njit(inline="always")(_put64)
    index_put = numba.njit(nogil=True, cache=True)(_put_index_entries)
    empty = np.zeros(0, dtype=np.int64)
    index_put(np.zeros(64, dtype=np.uint8), 0, 8, 1, 1, empty, empty, empty, 0)
    group = numba.njit(cache=True)(_group_entries)
    group(
        np.zeros((0, len(ROW)), dtype=np.int64),
        np.zeros(0, dtype=np.uint8),
        np.zeros((0, len(RUN)), dtype=np.int64),
    )
    scan = numba.njit(nogil=True, cache=True)(_scan_columns)
    table = TopicTable(1)
    scan(
        np.zeros(0, dtype=np.uint8), 0, 0, 1, table.bytes, table.lengths, 0,
        np.zeros((1, len(ROW)), dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), 0,
    )  # fmt: skip
    _index_put, _scan, _group = index_put, scan, group
    return scan


_COMPILED = CompileOnce("the dispatcher's scan", "dispatching in Python", _compile, ready=lambda: not _DISABLED)


def entry_grouper() -> Any:
    """The compiled ``group_entries`` once ``load`` has run (and found numba), else None."""
    return _group


def index_writer() -> Any:
    """The compiled ``put_index_entries`` once ``load`` has run (and found numba), else None."""
    return _index_put
