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
