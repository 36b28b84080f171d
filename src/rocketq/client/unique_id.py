"""Client-side unique message ids (UNIQ_KEY), laid out like Java's MessageClientIDSetter:
IPv4 (4 bytes) + pid (int16) + a per-process random int32 + ms since the month began (int32) +
a counter (int16), as 32 upper-case hex characters.

Each id is written in one pass, one f-string of the prefix and eight two-digit lookups (the ms and the
counter); ``tests/client/test_unique_id.py`` holds the ids equal to the layout written with one
``%``-format each."""

from __future__ import annotations

import datetime
import ipaddress
import os
import random
import struct
import threading
from typing import Final

_HEX: Final = tuple("%02X" % byte for byte in range(256))  # noqa: UP031
"""Each byte's two upper-case hex digits: the time's eight and the counter's four are lookups, not a
format call (compiled, a ``%04X`` cost about as much as the rest of the id; at 1,000 sends a second
each send starts a new millisecond, so the time is written for nearly every id)."""


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
        lock = self._lock
        lock.acquire()
        try:
            elapsed = self._since_month_start(now_ms) & 0x7FFFFFFF
            first = self._count
            self._count = first + count
        finally:
            lock.release()
        return elapsed, first

    def next_id(self, now_ms: int) -> str:
        elapsed, counter = self._reserve(1, now_ms)
        # one string built (at 1,000 sends a second each send starts a new millisecond: a part kept per
        # millisecond was written again for nearly every id, a second string built)
        return (
            f"{self._prefix}{_HEX[elapsed >> 24]}{_HEX[(elapsed >> 16) & 0xFF]}{_HEX[(elapsed >> 8) & 0xFF]}"
            f"{_HEX[elapsed & 0xFF]}{_HEX[(counter >> 8) & 0xFF]}{_HEX[counter & 0xFF]}"
        )

    def next_ids(self, count: int, now_ms: int) -> list[str]:
        """``count`` consecutive ids for messages created at ``now_ms`` (one lock for a whole batch)."""
        elapsed, first = self._reserve(count, now_ms)
        stem = (
            f"{self._prefix}{_HEX[elapsed >> 24]}{_HEX[(elapsed >> 16) & 0xFF]}{_HEX[(elapsed >> 8) & 0xFF]}"
            f"{_HEX[elapsed & 0xFF]}"
        )
        return [stem + _HEX[(counter >> 8) & 0xFF] + _HEX[counter & 0xFF] for counter in range(first, first + count)]
