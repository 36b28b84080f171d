"""The rates and day totals of GET_BROKER_RUNTIME_INFO, in RocketMQ's names and formats.

RocketMQ's store samples its counters once a second and keeps the last ten minutes of samples; a rate
is the growth of a counter between the newest sample and the one 10, 60 or 600 samples before it,
shown as three numbers with a space between ("10s 1m 10m"), each as Java prints a double ("12.5",
"0.0"). ``mqadmin clusterList`` and the RocketMQ Dashboard read the first of them. Where fewer samples
than a window are kept yet (a broker that started a moment ago), the rate runs from the oldest sample,
so the three numbers are always there (RocketMQ leaves such a number out).

The day totals (``msgPutTotalTodayMorning``, ``msgPutTotalYesterdayMorning``, ...) are the counters as
they were at the last two local midnights: the first sample of a new day marks them.

Nothing here reads a clock: the broker passes the time of each sample (``TpsSampler.sample``).
"""

from __future__ import annotations

import datetime
from collections import deque
from collections.abc import Mapping
from typing import Final

SAMPLE_INTERVAL_S: Final = 1.0
"""How often the broker samples its counters (RocketMQ: every 1000 ms)."""
WINDOWS: Final = (10, 60, 600)
"""The windows of a rate, in samples: 10 s, 1 min and 10 min."""
MAX_SAMPLES: Final = WINDOWS[-1] + 1


class PullCounters:
    """What pulls found: requests that returned messages (``found``), requests that returned none
    (``missed``), and the messages returned (``transferred``). The pull handler counts each pull once."""

    __slots__ = ("found", "missed", "transferred")

    def __init__(self) -> None:
        self.found = 0
        self.missed = 0
        self.transferred = 0

    def record(self, messages: int) -> None:
        """A pull returned ``messages`` messages (0: it found none)."""
        if messages:
            self.found += 1
            self.transferred += messages
        else:
            self.missed += 1


class TpsSampler:
    """Samples of named counters, one per ``sample`` call, the last ``max_samples`` kept."""

    def __init__(self, max_samples: int = MAX_SAMPLES) -> None:
        self._samples: deque[tuple[float, dict[str, int]]] = deque(maxlen=max_samples)
        self._day: datetime.date | None = None
        self.today_morning: dict[str, int] = {}  # the counters at the last midnight (none yet: 0)
        self.yesterday_morning: dict[str, int] = {}  # the counters at the midnight before

    def sample(self, now: float, counters: Mapping[str, int]) -> None:
        """Keep ``counters`` as of ``now`` (seconds since the epoch); the first sample of a new local
        day marks the day totals."""
        values = dict(counters)
        day = datetime.datetime.fromtimestamp(now).date()
        if self._day is not None and day != self._day:
            self.yesterday_morning = self.today_morning
            self.today_morning = values
        self._day = day
        self._samples.append((now, values))

    def tps(self, name: str, window: int) -> float:
        """Growth per second of counter ``name`` over the last ``window`` samples (fewer when fewer are
        kept); 0.0 with fewer than two samples."""
        samples = self._samples
        if len(samples) < 2:
            return 0.0
        begin_time, begin = samples[max(0, len(samples) - 1 - window)]
        end_time, end = samples[-1]
        if end_time <= begin_time:
            return 0.0
        return (end.get(name, 0) - begin.get(name, 0)) / (end_time - begin_time)

    def tps_text(self, *names: str) -> str:
        """The summed rate of ``names`` over 10 s, 1 min and 10 min, as RocketMQ writes it."""
        return " ".join(java_double(sum(self.tps(name, window) for name in names)) for window in WINDOWS)


def java_double(value: float) -> str:
    """``value`` as Java's ``Double.toString`` writes it for the rates a broker sees: always with a
    fraction ("3.0"), scientific from 10^7 on ("1.25E7")."""
    if value == 0:
        return "0.0"
    if 1e-3 <= abs(value) < 1e7:
        text = repr(float(value))
        return text if "." in text or "e" in text else text + ".0"
    mantissa, exponent = f"{value:.16e}".split("e")
    mantissa = mantissa.rstrip("0")
    if mantissa.endswith("."):
        mantissa += "0"
    return f"{mantissa}E{int(exponent)}"


def human_bytes(count: int) -> str:
    """A byte count as RocketMQ's ``MixAll.humanReadableByteCount(count, false)`` writes it: "512 B",
    "1.5 KiB", "2.0 GiB"."""
    if count < 1024:
        return f"{count} B"
    exponent = 0
    value = float(count)
    while value >= 1024 and exponent < 6:
        value /= 1024
        exponent += 1
    return f"{value:.1f} {'KMGTPE'[exponent - 1]}iB"


def runtime_text(elapsed_ms: int) -> str:
    """How long the broker has run, as RocketMQ writes ``runtime``: "[ 0 days, 1 hours, 2 minutes, 3 seconds ]"."""
    seconds, _ = divmod(max(0, elapsed_ms), 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    return f"[ {days:,} days, {hours} hours, {minutes} minutes, {seconds} seconds ]"


STATS_WINDOWS: Final = (("minute", 10.0, 60.0), ("hour", 60.0, 3600.0), ("day", 3600.0, 86400.0))
"""VIEW_BROKER_STATS_DATA's windows: name, how often a copy of the counters is kept, how long."""


class StatsWindows:
    """Named counters (a topic's messages put, a topic@group's messages got) over the last minute, hour
    and day, as RocketMQ's ``statsMinute``/``statsHour``/``statsDay``: a copy of the counters is kept
    every 10 s for a minute, every minute for an hour and every hour for a day (about 90 copies)."""

    def __init__(self) -> None:
        self._copies: dict[str, deque[tuple[float, dict[str, int]]]] = {name: deque() for name, _, _ in STATS_WINDOWS}

    def due(self, now: float) -> bool:
        """Whether a window keeps a copy at ``now`` (``sample`` is worth its counters)."""
        return any(not self._copies[name] or now - self._copies[name][-1][0] >= step for name, step, _ in STATS_WINDOWS)

    def sample(self, now: float, counters: Mapping[str, int]) -> None:
        """Offer the counters as of ``now``; each window keeps them when its step has passed."""
        values = dict(counters)
        for name, step, span in STATS_WINDOWS:
            copies = self._copies[name]
            if copies and now - copies[-1][0] < step:
                continue
            copies.append((now, values))
            while len(copies) > 1 and now - copies[1][0] >= span:
                copies.popleft()

    def window(self, name: str, key: str, now: float, current: int) -> tuple[int, float]:
        """(messages counted, per second) for ``key`` from the oldest copy of window ``name`` to
        ``current`` at ``now``; (0, 0.0) before any copy."""
        copies = self._copies[name]
        if not copies:
            return 0, 0.0
        began, start = copies[0]
        total = max(0, current - start.get(key, 0))
        return total, (total / (now - began) if now > began else 0.0)

    def known(self, key: str) -> bool:
        """Whether any kept copy counts ``key``."""
        return any(key in copy for copies in self._copies.values() for _, copy in copies)
