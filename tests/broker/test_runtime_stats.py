"""The runtime info's rates and day totals (``rocketq.broker.runtime_stats``), on a fake clock."""

from __future__ import annotations

import datetime

from rocketq.broker.runtime_stats import (
    PullCounters,
    StatsWindows,
    TpsSampler,
    human_bytes,
    java_double,
    runtime_text,
)


def test_rates_over_10s_1m_10m_from_one_sample_a_second() -> None:
    sampler = TpsSampler()
    start = datetime.datetime(2026, 11, 26, 12, 0, 0).timestamp()
    for second in range(601):  # 10 messages a second for the first 540 s, then 100 a second
        total = 10 * min(second, 540) + 100 * max(0, second - 540)
        sampler.sample(start + second, {"put": total})
    assert sampler.tps("put", 10) == 100.0
    assert sampler.tps("put", 60) == 100.0
    assert sampler.tps("put", 600) == (5400 + 6000) / 600
    assert sampler.tps_text("put") == "100.0 100.0 19.0"


def test_a_young_broker_rates_from_its_oldest_sample_and_sums_counters() -> None:
    sampler = TpsSampler()
    assert sampler.tps_text("found") == "0.0 0.0 0.0"
    sampler.sample(1000.0, {"found": 0, "missed": 0})
    sampler.sample(1004.0, {"found": 8, "missed": 4})
    assert sampler.tps_text("found") == "2.0 2.0 2.0"
    assert sampler.tps_text("found", "missed") == "3.0 3.0 3.0"


def test_only_the_last_ten_minutes_are_kept() -> None:
    sampler = TpsSampler(max_samples=11)
    for second in range(30):
        sampler.sample(float(second), {"put": second * second})
    assert sampler.tps("put", 600) == (29 * 29 - 19 * 19) / 10


def test_midnight_marks_the_day_totals() -> None:
    sampler = TpsSampler()
    evening = datetime.datetime(2026, 11, 25, 23, 59, 59).timestamp()
    sampler.sample(evening, {"put": 5})
    assert sampler.today_morning == {} and sampler.yesterday_morning == {}
    sampler.sample(evening + 1, {"put": 7})
    assert sampler.today_morning == {"put": 7} and sampler.yesterday_morning == {}
    sampler.sample(evening + 1 + 86400, {"put": 30})
    assert sampler.today_morning == {"put": 30} and sampler.yesterday_morning == {"put": 7}


def test_pull_counters() -> None:
    counters = PullCounters()
    counters.record(5)
    counters.record(0)
    counters.record(3)
    assert (counters.found, counters.missed, counters.transferred) == (2, 1, 8)


def test_java_formats() -> None:
    assert [java_double(v) for v in (0.0, 3.0, 12.5, 1.25e7, 0.0001)] == ["0.0", "3.0", "12.5", "1.25E7", "1.0E-4"]
    assert [human_bytes(n) for n in (0, 1023, 1536, 3 * 1024**3)] == ["0 B", "1023 B", "1.5 KiB", "3.0 GiB"]
    assert runtime_text(((2 * 24 + 3) * 3600 + 4 * 60 + 5) * 1000 + 999) == "[ 2 days, 3 hours, 4 minutes, 5 seconds ]"


def test_stats_windows_minute_hour_and_day() -> None:
    windows = StatsWindows()
    assert windows.window("minute", "t", 0.0, 5) == (0, 0.0) and not windows.known("t")
    for second in range(0, 7200, 5):  # a counter growing 1 a second, offered every 5 s for two hours
        if windows.due(float(second)):
            windows.sample(float(second), {"t": second})
    now = 7200.0
    assert windows.known("t")
    minute_sum, minute_tps = windows.window("minute", "t", now, 7200)
    assert 60 <= minute_sum <= 70 and minute_tps == 1.0  # copies every 10 s: the window starts 60-70 s back
    hour_sum, hour_tps = windows.window("hour", "t", now, 7200)
    assert 3600 <= hour_sum <= 3660 and hour_tps == 1.0
    day_sum, _ = windows.window("day", "t", now, 7200)
    assert day_sum == 7200  # less than a day kept: from the first copy
    assert windows.window("minute", "other", now, 3) == (3, 3 / minute_sum)
