"""The dispatcher's CommitLog scan compiled with numba, used when numba is installed.

``scan_records`` reads consecutive stored records (protocol-4x.md §4.1) out of a mapped file's bytes and
writes one row of ``COLUMNS`` per record: the header fields the dispatcher needs, the spans of the topic,
KEYS and UNIQ_KEY, and the TAGS hash code, computed as Java's ``String.hashCode``. It parses only the
common case and stops *before* any record it leaves to the Python scan, which handles it and then hands
back: a BLANK filler or unknown magic, a header that does not fit before the file's end, spans that do
not fit in their record, hosts in the IPv6 layout, the delay topic (whose tag code is a delivery time),
and TAGS that are not ASCII (hashed over UTF-16 units). Property lookups follow ``find_property``: a
name counts at the start of a ``\\x02``-separated segment, the last non-empty value wins.

Compiled with ``nogil=True`` (the dispatcher thread lets the GIL go while it scans) and ``cache=True``
(the machine code is kept next to this module after the first compile, about two seconds). ``load``
imports numba and compiles or loads the scan the first time a store is made, so importing rocketq stays
cheap and no dispatch waits for a compiler.
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
import time
from typing import Any, Final

import numpy as np

from rocketq.common import record as rec
from rocketq.common.message import SCHEDULE_TOPIC

COLUMNS: Final = (
    "position",  # in the file
    "total_size",
    "queue_id",
    "queue_offset",
    "physical_offset",
    "sys_flag",
    "store_timestamp",
    "topic_at",
    "topic_length",
    "tags_code",
    "keys_at",
    "keys_length",  # 0: no KEYS
    "uniq_at",
    "uniq_length",  # 0: no UNIQ_KEY
)
ROW_WIDTH: Final = len(COLUMNS)

log = logging.getLogger(__name__)

_DISABLED = os.environ.get("ROCKETQ_NATIVE_SCAN", "1") == "0"
_LOAD_LOCK = threading.Lock()
_loaded = False
numba: Any = None  # the module, once load() imported it
int32_at: Any = None  # compiled helpers, shared with native_columns
int64_at: Any = None
starts_with: Any = None
_scan: Any = None

# Module-level constants: numba freezes them into the compiled code (closures would defeat the cache).
_MESSAGE_MAGIC = rec.MESSAGE_MAGIC
_HEAD_SIZE = rec.HEAD_SIZE
_V6_HOSTS = int(rec.SysFlag.BORNHOST_V6 | rec.SysFlag.STOREHOST_V6)
_TAGS = np.frombuffer(b"TAGS\x01", dtype=np.uint8)
_KEYS = np.frombuffer(b"KEYS\x01", dtype=np.uint8)
_UNIQ = np.frombuffer(b"UNIQ_KEY\x01", dtype=np.uint8)
_SCHEDULE = np.frombuffer(SCHEDULE_TOPIC.encode(), dtype=np.uint8)


def _int32_at(b: Any, p: Any) -> Any:
    v = (np.int64(b[p]) << 24) | (np.int64(b[p + 1]) << 16) | (np.int64(b[p + 2]) << 8) | np.int64(b[p + 3])
    return v - (np.int64(1) << 32) if v >= (np.int64(1) << 31) else v


def _int64_at(b: Any, p: Any) -> Any:
    v = np.uint64(0)
    for k in range(8):
        v = (v << np.uint64(8)) | np.uint64(b[p + k])
    return np.int64(v)


def _starts_with(b: Any, p: Any, end: Any, name: Any) -> bool:
    if p + len(name) > end:
        return False
    for k in range(len(name)):  # noqa: SIM110 (numba compiles loops, not generators)
        if b[p + k] != name[k]:
            return False
    return True


def _scan_records(b: Any, position: Any, end: Any, max_records: int, out: Any) -> tuple[Any, Any]:
    file_size = len(b)
    count = 0
    while position < end and count < max_records:
        if file_size - position < _HEAD_SIZE:
            break
        total = int32_at(b, position)
        if int32_at(b, position + 4) != _MESSAGE_MAGIC or total < _HEAD_SIZE or position + total > end:
            break
        sys_flag = int32_at(b, position + 36)
        if sys_flag & _V6_HOSTS:
            break
        record_end = position + total
        topic_at = position + _HEAD_SIZE + int32_at(b, position + 84)
        if topic_at < position + _HEAD_SIZE or topic_at + 1 > record_end:
            break
        topic_length = np.int64(b[topic_at])
        properties_at = topic_at + 1 + topic_length + 2
        if properties_at > record_end:
            break
        properties_end = properties_at + ((np.int64(b[properties_at - 2]) << 8) | np.int64(b[properties_at - 1]))
        if properties_end > record_end:
            break
        if topic_length == len(_SCHEDULE) and starts_with(b, topic_at + 1, record_end, _SCHEDULE):
            break
        tags_code = np.int64(0)
        keys_at = keys_length = uniq_at = uniq_length = np.int64(0)
        ascii_tags = True
        segment = properties_at
        while segment < properties_end:
            stop = segment
            while stop < properties_end and b[stop] != 2:
                stop += 1
            if starts_with(b, segment, stop, _TAGS) and stop > segment + len(_TAGS):
                h = np.int64(0)
                ascii_tags = True
                for k in range(segment + len(_TAGS), stop):
                    if b[k] >= 128:
                        ascii_tags = False
                    h = (h * 31 + np.int64(b[k])) & 0xFFFFFFFF
                tags_code = h - (np.int64(1) << 32) if h >= (np.int64(1) << 31) else h
            elif starts_with(b, segment, stop, _KEYS) and stop > segment + len(_KEYS):
                keys_at, keys_length = segment + len(_KEYS), stop - segment - len(_KEYS)
            elif starts_with(b, segment, stop, _UNIQ) and stop > segment + len(_UNIQ):
                uniq_at, uniq_length = segment + len(_UNIQ), stop - segment - len(_UNIQ)
            segment = stop + 1
        if not ascii_tags:
            break
        row = out[count]
        row[0] = position
        row[1] = total
        row[2] = int32_at(b, position + 12)
        row[3] = int64_at(b, position + 20)
        row[4] = int64_at(b, position + 28)
        row[5] = sys_flag
        row[6] = int64_at(b, position + 56)
        row[7] = topic_at + 1
        row[8] = topic_length
        row[9] = tags_code
        row[10] = keys_at
        row[11] = keys_length
        row[12] = uniq_at
        row[13] = uniq_length
        count += 1
        position = record_end
    return count, position


def load() -> Any:
    """The compiled ``scan_records(bytes_u8, position, end, max_records, out_int64[max_records,
    ROW_WIDTH]) -> (count, next_position)``, compiled (or loaded from the cache) on the first call;
    None without numba, or with ROCKETQ_NATIVE_SCAN=0."""
    global _loaded, numba, int32_at, int64_at, starts_with, _scan
    with _LOAD_LOCK:
        if _loaded:
            return _scan
        _loaded = True
        if _DISABLED:
            return None
        try:
            numba = importlib.import_module("numba")
        except ImportError:  # the pure-Python scan does the work
            return None
        began = time.monotonic()
        int32_at = numba.njit(inline="always")(_int32_at)
        int64_at = numba.njit(inline="always")(_int64_at)
        starts_with = numba.njit(inline="always")(_starts_with)
        scan = numba.njit(nogil=True, cache=True)(_scan_records)
        scan(np.zeros(0, dtype=np.uint8), 0, 0, 1, np.zeros((1, ROW_WIDTH), dtype=np.int64))
        _scan = scan
        if time.monotonic() - began > 1:
            log.info(
                "compiled the dispatcher's CommitLog scan in %.1f s (cached for later starts)", time.monotonic() - began
            )
        return _scan
