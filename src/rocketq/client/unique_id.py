"""Client-side unique message ids (UNIQ_KEY), laid out like Java's MessageClientIDSetter:
IPv4 (4 bytes) + pid (int16) + a per-process random int32 + ms since the month began (int32) +
a counter (int16), as 32 upper-case hex characters.

Each id is written in one pass, one f-string of the prefix and eight two-digit lookups (the ms and the
counter); ``tests/client/test_unique_id.py`` holds the ids equal to the layout written with one
``%``-format each."""

from __future__ import annotations

import datetime
import ipaddress
import itertools
import os
import random
import struct
from typing import Final

_HEX: Final = tuple("%02X" % byte for byte in range(256))  # noqa: UP031
"""Each byte's two upper-case hex digits: the time's eight and the counter's four are lookups, not a
format call (compiled, a ``%04X`` cost about as much as the rest of the id; at 1,000 sends a second
each send starts a new millisecond, so the time is written for nearly every id)."""


class UniqueIdGenerator:
    """Thread safety: any thread, without a lock. The counter is an ``itertools.count`` (each ``next`` one
    step, which the GIL keeps whole), and the month's bounds are one tuple, replaced whole: two threads
    crossing into a new month at once both write the same bounds. (A lock taken and released per id was
    two method calls, about a third of an id's cost compiled.)"""

    def __init__(self, ip: str) -> None:
        try:
            address = ipaddress.IPv4Address(ip).packed
        except ValueError:
            address = bytes(4)
        self._prefix = (address + struct.pack(">hi", os.getpid() & 0x7FFF, random.getrandbits(31))).hex().upper()
        self._counter = itertools.count()
        self._month: tuple[int, int] = (0, 0)  # (when the month of the last id began, when the next begins), ms

    def _since_month_start(self, now_ms: int) -> int:
        """ms since the month of ``now_ms`` began (local time, as Java's), as the id's 31 bits hold it."""
        start_ms, next_month_ms = self._month
        if now_ms >= next_month_ms or now_ms < start_ms:
            now = datetime.datetime.fromtimestamp(now_ms / 1000)
            start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
            following = (start + datetime.timedelta(days=32)).replace(day=1)
            start_ms = int(start.timestamp() * 1000)
            self._month = (start_ms, int(following.timestamp() * 1000))
        return (now_ms - start_ms) & 0x7FFFFFFF

    def next_id(self, now_ms: int) -> str:
        """A new id for a message created at ``now_ms`` (ms since the epoch)."""
        counter: int = next(self._counter)
        elapsed = self._since_month_start(now_ms)
        # one string built (at 1,000 sends a second each send starts a new millisecond: a part kept per
        # millisecond was written again for nearly every id, a second string built)
        return (
            f"{self._prefix}{_HEX[elapsed >> 24]}{_HEX[(elapsed >> 16) & 0xFF]}{_HEX[(elapsed >> 8) & 0xFF]}"
            f"{_HEX[elapsed & 0xFF]}{_HEX[(counter >> 8) & 0xFF]}{_HEX[counter & 0xFF]}"
        )

    def next_ids(self, count: int, now_ms: int) -> list[str]:
        """``count`` new ids for messages created at ``now_ms``: consecutive counters, unless another
        thread takes ids at the same moment (they are unique all the same)."""
        elapsed = self._since_month_start(now_ms)
        stem = (
            f"{self._prefix}{_HEX[elapsed >> 24]}{_HEX[(elapsed >> 16) & 0xFF]}{_HEX[(elapsed >> 8) & 0xFF]}"
            f"{_HEX[elapsed & 0xFF]}"
        )
        counters = self._counter
        ids = []
        for _ in range(count):
            counter: int = next(counters)
            ids.append(stem + _HEX[(counter >> 8) & 0xFF] + _HEX[counter & 0xFF])
        return ids
