"""ConsumeRates: a group's messages per second from a topic over the last minute."""

from __future__ import annotations

import pytest

from rocketq.broker.consume_rates import ConsumeRates


def test_the_rate_is_the_growth_since_the_oldest_sample_of_the_minute() -> None:
    rates = ConsumeRates()
    assert rates.tps("G", "T", now=5.0) == 0.0  # nothing sampled yet
    rates.sample(0.0)
    rates.record("G", "T", 32)
    rates.record("G", "T", 8)
    rates.record("G", "Other", 100)
    rates.record("H", "T", 7)
    assert rates.tps("G", "T", now=10.0) == pytest.approx(4.0)  # 40 in 10 s
    assert rates.tps("H", "T", now=10.0) == pytest.approx(0.7)
    assert rates.tps("G", "Unknown", now=10.0) == 0.0
    assert rates.tps("G", "T", now=0.0) == 0.0  # (no time has passed)
    for second in range(10, 70, 10):
        rates.sample(float(second))
    rates.record("G", "T", 20)
    assert rates.tps("G", "T", now=70.0) == pytest.approx(60 / 70)  # the copy at 0 s is still the start
    rates.sample(70.0)  # now the copy at 10 s (60 s old) starts the minute: the first 40 fall out
    assert rates.tps("G", "T", now=70.0) == pytest.approx(20 / 60)
    for second in range(90, 200, 10):
        rates.sample(float(second))
    assert rates.tps("G", "T", now=190.0) == 0.0  # a quiet minute


def test_totals_bytes_and_reached_offsets_are_kept_per_group_and_topic() -> None:
    rates = ConsumeRates()
    rates.record("G", "T", 2, 300, 0, 12)
    rates.record("G", "T", 1, 100, 1, 5)
    rates.record("G", "T", 3, 50, 0, 15)  # queue 0 reached further
    rates.record("H", "T", 4, 40)  # no queue: counted, no offset kept
    assert rates.totals == {("G", "T"): 6, ("H", "T"): 4}
    assert rates.bytes == {("G", "T"): 450, ("H", "T"): 40}
    assert rates.pulled == {("G", "T", 0): 15, ("G", "T", 1): 5}
    rates.totals[("G", "T")] = 0  # copies: the counts are not changed through them
    assert rates.totals[("G", "T")] == 6
