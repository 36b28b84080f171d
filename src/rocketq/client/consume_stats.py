"""A consumer's pull and consume rates per topic (Java's ConsumerStatsManager), as GET_CONSUMER_RUNNING_INFO
reports them (``rocketq.client.running_info``).

``ConsumerStats`` counts pulls (round trip, messages) and listener runs (messages consumed, failed,
time spent) per topic, and keeps a copy of the totals at most once a second (on the ``clock`` it is
given): a rate is the growth since the oldest copy of the last minute, ``consumeFailedMsgs`` the
failures of the last hour. Counting takes a lock (consume threads count too) once per pull or run,
never per message. Compiled (``rocketq.native``): every pulled batch and every listener run counts here.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import final

from rocketq.protocol.running_info import ConsumeStatus

RATE_WINDOW_S = 60.0
FAILED_WINDOW_S = 3600.0


@dataclass(slots=True)
class _Totals:
    pulls: int = 0
    pull_rt_ms: float = 0.0
    pulled: int = 0
    runs_ms: float = 0.0
    consumed: int = 0  # messages the listener took, ok or failed
    ok: int = 0
    failed: int = 0

    def copy(self) -> _Totals:
        return _Totals(self.pulls, self.pull_rt_ms, self.pulled, self.runs_ms, self.consumed, self.ok, self.failed)


@final
class _TopicCounts:
    """One topic's totals and the copies of them kept for the rates' windows."""

    def __init__(self, now: float) -> None:
        self.totals = _Totals()
        # copies of the totals every second for the last minute, every minute for the last hour
        self.seconds: deque[tuple[float, _Totals]] = deque([(now, _Totals())])
        self.minutes: deque[tuple[float, _Totals]] = deque([(now, _Totals())])
        self.copied_at = now  # when the last copy went to ``seconds``


class ConsumerStats:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        """``clock``: seconds, for the rates' windows (tests give a fake one)."""
        self._clock = clock
        self._lock = threading.Lock()
        # its two methods bound once: calling them is cheaper than a ``with`` or a method call each time
        # in compiled code (every pull and every listener run counts here)
        self._acquire = self._lock.acquire
        self._release = self._lock.release
        self._topics: dict[str, _TopicCounts] = {}

    def _keep(self, topic: str, now: float) -> _Totals:
        counts = self._topics.get(topic)
        if counts is None:
            counts = self._topics[topic] = _TopicCounts(now)
            return counts.totals
        totals = counts.totals
        if now - counts.copied_at < 1.0:  # the usual case: a copy was kept this second already
            return totals
        seconds = counts.seconds
        seconds.append((now, totals.copy()))
        counts.copied_at = now
        while len(seconds) > 1 and now - seconds[1][0] >= RATE_WINDOW_S:
            seconds.popleft()
        minutes = counts.minutes
        if now - minutes[-1][0] >= 60.0:
            minutes.append((now, totals.copy()))
            while len(minutes) > 1 and now - minutes[1][0] >= FAILED_WINDOW_S:
                minutes.popleft()
        return totals

    def pulled(self, topic: str, messages: int, round_trip_s: float) -> None:
        """A pull of ``topic`` returned ``messages`` after ``round_trip_s``."""
        self._acquire()
        try:
            totals = self._keep(topic, self._clock())
            totals.pulls += 1
            totals.pull_rt_ms += round_trip_s * 1000
            totals.pulled += messages
        finally:
            self._release()

    def consumed(self, topic: str, ok: int, failed: int, spent_s: float) -> None:
        """The listener took ``ok + failed`` messages of ``topic`` in ``spent_s``; ``failed`` go back."""
        self._acquire()
        try:
            totals = self._keep(topic, self._clock())
            totals.runs_ms += spent_s * 1000
            totals.consumed += ok + failed
            totals.ok += ok
            totals.failed += failed
        finally:
            self._release()

    def status(self, topic: str) -> ConsumeStatus:
        """The rates of the last minute, and the failures of the last hour."""
        with self._lock:
            now = self._clock()
            totals = self._keep(topic, now)
            counts = self._topics[topic]
            seconds_copies = counts.seconds
            minute = next(((at, c) for at, c in seconds_copies if now - at <= RATE_WINDOW_S), seconds_copies[-1])
            hour_start = counts.minutes[0][1]
        began, start = minute
        seconds = max(now - began, 1e-9)
        pulls, consumed = totals.pulls - start.pulls, totals.consumed - start.consumed
        return ConsumeStatus(
            pull_rt=round((totals.pull_rt_ms - start.pull_rt_ms) / pulls, 3) if pulls else 0.0,
            pull_tps=round((totals.pulled - start.pulled) / seconds, 3) if now > began else 0.0,
            consume_rt=round((totals.runs_ms - start.runs_ms) / consumed, 3) if consumed else 0.0,
            consume_ok_tps=round((totals.ok - start.ok) / seconds, 3) if now > began else 0.0,
            consume_failed_tps=round((totals.failed - start.failed) / seconds, 3) if now > began else 0.0,
            consume_failed_msgs=totals.failed - hour_start.failed,
        )

    def topics(self) -> list[str]:
        with self._lock:
            return sorted(self._topics)
