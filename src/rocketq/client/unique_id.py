"""Client-side unique message ids (UNIQ_KEY), laid out like Java's MessageClientIDSetter:
IPv4 (4 bytes) + pid (int16) + a per-process random int32 + ms since the month began (int32) +
a counter (int16), as 32 upper-case hex characters."""

from __future__ import annotations

import datetime
import ipaddress
import os
import random
import struct
import threading


class UniqueIdGenerator:
    def __init__(self, ip: str) -> None:
        try:
            address = ipaddress.IPv4Address(ip).packed
        except ValueError:
            address = bytes(4)
        self._prefix = (address + struct.pack(">hi", os.getpid() & 0x7FFF, random.getrandbits(31))).hex().upper()
        self._count = 0
        self._lock = threading.Lock()
        self._month_start_ms = 0
        self._next_month_ms = 0

    def _since_month_start(self, now_ms: int) -> int:
        if now_ms >= self._next_month_ms:
            now = datetime.datetime.fromtimestamp(now_ms / 1000)
            start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
            following = (start + datetime.timedelta(days=32)).replace(day=1)
            self._month_start_ms = int(start.timestamp() * 1000)
            self._next_month_ms = int(following.timestamp() * 1000)
        return now_ms - self._month_start_ms

    def _reserve(self, count: int, now_ms: int) -> tuple[int, int]:
        """(ms since the month began, first counter) for ``count`` ids created at ``now_ms``."""
        with self._lock:
            elapsed = self._since_month_start(now_ms) & 0x7FFFFFFF
            first = self._count
            self._count = first + count
        return elapsed, first

    def next_id(self, now_ms: int) -> str:
        elapsed, counter = self._reserve(1, now_ms)
        # printf-style: compiled, it formats in one call where an f-string with format specs makes one each
        return "%s%08X%04X" % (self._prefix, elapsed, counter & 0xFFFF)  # noqa: UP031

    def next_ids(self, count: int, now_ms: int) -> list[str]:
        """``count`` consecutive ids for messages created at ``now_ms`` (one lock for a whole batch)."""
        elapsed, first = self._reserve(count, now_ms)
        stem = "%s%08X" % (self._prefix, elapsed)  # noqa: UP031 (as in next_id)
        return ["%s%04X" % (stem, counter & 0xFFFF) for counter in range(first, first + count)]  # noqa: UP031
