"""Sets of half-queue offsets as sorted, disjoint ``[start, end)`` ranges, and the op-message body that
lists them.

An op body (``RMQ_SYS_TRANS_OP_HALF_TOPIC``) names the half messages one settlement settled, as
comma-separated decimal offsets (RocketMQ 4.x writes one offset per op message, RocketMQ 5.x several
separated by commas); rocketq also writes an inclusive run ``first-last`` as one item, so the op of a
transactional batch of 10,000 messages stays a few bytes long.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator

Range = tuple[int, int]
"""Half-queue offsets ``[start, end)``."""


class OffsetRanges:
    """A set of offsets kept as sorted, disjoint, non-adjacent ranges (adjacent ones are merged)."""

    def __init__(self, ranges: Iterable[Range] = ()) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        for start, end in ranges:
            self.add(start, end)

    def add(self, start: int, end: int) -> None:
        """Add ``[start, end)`` (nothing when empty)."""
        if end <= start:
            return
        starts, ends = self._starts, self._ends
        first = bisect.bisect_left(ends, start)  # the first range that ends at or after ``start``
        last = bisect.bisect_right(starts, end)  # ranges from ``first`` to ``last`` touch the new one
        if first < last:
            start = min(start, starts[first])
            end = max(end, ends[last - 1])
        starts[first:last] = [start]
        ends[first:last] = [end]

    def __contains__(self, offset: object) -> bool:
        if not isinstance(offset, int):
            return False
        index = bisect.bisect_right(self._starts, offset) - 1
        return index >= 0 and offset < self._ends[index]

    def covers(self, start: int, end: int) -> bool:
        """Whether every offset of ``[start, end)`` is in the set."""
        index = bisect.bisect_right(self._starts, start) - 1
        return index >= 0 and end <= self._ends[index]

    def overlaps(self, start: int, end: int) -> bool:
        """Whether some offset of ``[start, end)`` is in the set."""
        index = bisect.bisect_left(self._ends, start + 1)
        return index < len(self._starts) and self._starts[index] < end

    def end_of_range_at(self, offset: int) -> int:
        """The end of the range holding ``offset``; ``offset`` itself when it is not in the set."""
        index = bisect.bisect_right(self._starts, offset) - 1
        return self._ends[index] if index >= 0 and offset < self._ends[index] else offset

    def drop_below(self, offset: int) -> None:
        """Forget every offset below ``offset``."""
        index = bisect.bisect_right(self._ends, offset)
        del self._starts[:index], self._ends[:index]
        if self._starts and self._starts[0] < offset:
            self._starts[0] = offset

    def __iter__(self) -> Iterator[Range]:
        return iter(zip(self._starts, self._ends, strict=True))

    def __len__(self) -> int:
        """How many ranges (not offsets)."""
        return len(self._starts)

    def __bool__(self) -> bool:
        return bool(self._starts)

    def __repr__(self) -> str:
        return f"OffsetRanges({list(self)})"


def encode_op_body(ranges: Iterable[Range]) -> bytes:
    """``[(5, 6), (7, 10)]`` -> ``b"5,7-9"``."""
    items = [str(start) if end == start + 1 else f"{start}-{end - 1}" for start, end in ranges if end > start]
    return ",".join(items).encode()


def decode_op_body(body: bytes) -> list[Range]:
    """The ranges an op body lists; items that are not offsets or runs are skipped."""
    ranges: list[Range] = []
    for item in body.decode("ascii", "replace").split(","):
        first, dash, last = item.strip().partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            continue
        start = int(first)
        end = int(last) + 1 if dash else start + 1
        if end > start:
            ranges.append((start, end))
    return ranges


def as_ranges(offsets: Iterable[int]) -> list[Range]:
    """Sorted offsets (or any) as the fewest ranges."""
    ranges: list[Range] = []
    for offset in sorted(set(offsets)):
        if ranges and ranges[-1][1] == offset:
            ranges[-1] = (ranges[-1][0], offset + 1)
        else:
            ranges.append((offset, offset + 1))
    return ranges


def in_order(offsets: Iterable[int]) -> list[Range]:
    """Offsets in the order given as ranges, merging only an offset that follows its predecessor."""
    ranges: list[Range] = []
    for offset in offsets:
        if ranges and ranges[-1][1] == offset:
            ranges[-1] = (ranges[-1][0], offset + 1)
        else:
            ranges.append((offset, offset + 1))
    return ranges
