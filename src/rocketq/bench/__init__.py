"""Benchmarks (``rocketq bench ...``): what one measurement is and how it is printed.

Every benchmark reports ``Measurement`` objects through a ``Sink``. The CLI prints them either as an
aligned text table or as JSON lines (one object per measurement). Rates use decimal units:
1 MB = 10**6 bytes; latencies are microseconds per call.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rocketq.native import STATUS as NATIVE_STATUS

log = logging.getLogger(__name__)

MB = 1_000_000

Extra = dict[str, float | int | str | None]


@dataclass(slots=True, kw_only=True)
class Measurement:
    """One benchmark result. ``extra`` holds run-specific numbers (ratios, lags, ...)."""

    name: str
    messages: int
    seconds: float
    msgs_per_s: float
    mb_per_s: float
    p50_us: float | None = None
    p99_us: float | None = None
    size: int | None = None
    writers: int = 1
    batch: int = 1
    extra: Extra = field(default_factory=dict)

    @classmethod
    def from_counts(
        cls,
        name: str,
        size: int | None,
        messages: int,
        seconds: float,
        nbytes: float,
        latencies: list[int] | None = None,
        *,
        writers: int = 1,
        batch: int = 1,
        extra: Extra | None = None,
    ) -> Measurement:
        """A measurement from raw counts (bytes, and per-operation latencies in ns when measured)."""
        p50, p99 = latency_us(latencies) if latencies is not None else (None, None)
        seconds = max(seconds, 1e-9)
        return cls(
            name=name,
            size=size,
            messages=messages,
            writers=writers,
            batch=batch,
            seconds=seconds,
            msgs_per_s=messages / seconds,
            mb_per_s=nbytes / MB / seconds,
            p50_us=p50,
            p99_us=p99,
            extra=extra or {},
        )

    def as_dict(self) -> dict[str, object]:
        """The measurement as a flat dict (``extra`` keys merged in)."""
        data: dict[str, object] = {
            "name": self.name,
            "size": self.size,
            "messages": self.messages,
            "writers": self.writers,
            "batch": self.batch,
            "seconds": round(self.seconds, 6),
            "msgs_per_s": round(self.msgs_per_s, 1),
            "mb_per_s": round(self.mb_per_s, 3),
            "p50_us": None if self.p50_us is None else round(self.p50_us, 2),
            "p99_us": None if self.p99_us is None else round(self.p99_us, 2),
            "compiled": NATIVE_STATUS.compiled,
        }
        data.update({key: round(value, 4) if isinstance(value, float) else value for key, value in self.extra.items()})
        return data

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), separators=(",", ":"))


def message_path_note() -> str:
    """The line a table starts with: whether the compiled (mypyc) message path is measured."""
    if NATIVE_STATUS.compiled:
        return "Message path: compiled with mypyc (ROCKETQ_NATIVE=off measures plain Python)."
    return f"Message path: plain Python ({NATIVE_STATUS.reason})."


Sink = Callable[[Measurement], None]
"""Receives each measurement as soon as it is taken."""


def percentile(sorted_values: Sequence[int], fraction: float) -> int:
    """Nearest-rank percentile of an already sorted sequence (0 when empty)."""
    if not sorted_values:
        return 0
    index = min(len(sorted_values) - 1, max(0, round(fraction * (len(sorted_values) - 1))))
    return sorted_values[index]


def latency_us(latencies_ns: list[int]) -> tuple[float | None, float | None]:
    """(p50, p99) in microseconds of per-call latencies in nanoseconds; sorts the list in place."""
    if not latencies_ns:
        return None, None
    latencies_ns.sort()
    return percentile(latencies_ns, 0.50) / 1000, percentile(latencies_ns, 0.99) / 1000


_COLUMNS: tuple[tuple[str, int], ...] = (
    ("name", 20),
    ("size", 6),
    ("batch", 5),
    ("writers", 7),
    ("messages", 11),
    ("seconds", 8),
    ("msgs/s", 12),
    ("MB/s", 9),
    ("p50 us", 9),
    ("p99 us", 9),
)


def _number(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def table_header() -> str:
    """The header of the text table, with an underline."""
    head = " ".join(title.rjust(width) if i else title.ljust(width) for i, (title, width) in enumerate(_COLUMNS))
    return f"{head}  notes\n{'-' * (len(head) + 7)}"


def table_row(m: Measurement) -> str:
    """One measurement as an aligned text row; ``extra`` goes into the notes column."""
    cells = (
        m.name,
        "-" if m.size is None else str(m.size),
        str(m.batch),
        str(m.writers),
        f"{m.messages:,}",
        f"{m.seconds:.2f}",
        _number(m.msgs_per_s, 0),
        _number(m.mb_per_s, 1),
        _number(m.p50_us, 1),
        _number(m.p99_us, 1),
    )
    row = " ".join(
        cell.rjust(width) if i else cell.ljust(width)
        for i, (cell, (_, width)) in enumerate(zip(cells, _COLUMNS, strict=True))
    )
    notes = " ".join(f"{key}={_note(value)}" for key, value in m.extra.items())
    return f"{row}  {notes}".rstrip()


def _note(value: float | int | str | None) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


@contextlib.contextmanager
def scratch_directory(parent: Path | None, name: str) -> Iterator[Path]:
    """A fresh directory ``rocketq-bench-<name>-*`` under ``parent`` (made if missing; None: the system
    temp dir), removed with everything in it afterwards."""
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix=f"rocketq-bench-{name}-", dir=parent))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


__all__ = [
    "MB",
    "Extra",
    "Measurement",
    "Sink",
    "latency_us",
    "percentile",
    "scratch_directory",
    "table_header",
    "table_row",
]
