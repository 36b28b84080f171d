"""The dashboard's arithmetic and escaping, without a cluster: rates, system topics, form fields, HTML."""

from __future__ import annotations

from datetime import datetime

import pytest

from rocketq.dashboard.figures import (
    RateMeter,
    broker_rates,
    disk_ratio,
    is_system_topic,
    lag,
    parse_properties,
    parse_time_field,
    reported_tps,
)
from rocketq.dashboard.html import esc, link, page, path, table
from rocketq.testing import FakeClock


def test_a_rate_needs_two_readings_far_enough_apart() -> None:
    clock = FakeClock(start=100.0)
    meter = RateMeter(clock.time, min_interval_s=1.0)
    assert meter.rate("k", 1000) is None  # the first reading
    clock.advance(0.5)
    assert meter.rate("k", 1200) is None  # too soon: nothing yet
    clock.advance(1.5)
    assert meter.rate("k", 1400) == pytest.approx(200.0)  # 400 in 2 s
    clock.advance(0.2)
    assert meter.rate("k", 5000) == pytest.approx(200.0)  # too soon: the last rate stays
    clock.advance(1.0)
    assert meter.rate("k", 5000) == pytest.approx(3600 / 1.2)
    assert meter.rate("k", 10) is None  # the counter went down: a restarted broker, start over


def test_broker_rates_prefer_what_the_broker_reports() -> None:
    clock = FakeClock(start=0.0)
    meter = RateMeter(clock.time)
    rocketmq = {"putTps": "12.50 11.00 10.00", "getTransferedTps": "3.00 2.00 1.00", "put_messages": "7"}
    rates = broker_rates("b:1", rocketmq, meter)
    assert (rates.put_tps, rates.get_tps) == (12.5, 3.0)
    counters = {"put_messages": "100", "get_messages": "10"}
    assert broker_rates("b:2", counters, meter).put_tps is None
    clock.advance(2.0)
    rates = broker_rates("b:2", {"put_messages": "300", "get_messages": "30"}, meter)
    assert (rates.put_tps, rates.get_tps) == (100.0, 10.0)
    assert reported_tps("n/a") is None and reported_tps("") is None


def test_disk_lag_and_system_topics() -> None:
    assert disk_ratio({"commitLogDiskRatio": "0.25", "disk_used_ratio": "0.5"}) == 0.25
    assert disk_ratio({"disk_used_ratio": "0.5"}) == 0.5 and disk_ratio({}) is None
    assert lag(10, 4) == 6 and lag(10, -1) == 10 and lag(3, 5) == 0
    assert all(is_system_topic(t) for t in ("TBW102", "%RETRY%g", "%DLQ%g", "SCHEDULE_TOPIC_XXXX", "rmq_sys_x"))
    assert is_system_topic("DefaultCluster", ["DefaultCluster", "broker-a"])
    assert not is_system_topic("Orders", ["DefaultCluster"])


def test_form_fields() -> None:
    assert parse_time_field("", 123) == 123 and parse_time_field("now", 5) == 5
    assert parse_time_field("1700000000000", 0) == 1_700_000_000_000
    assert parse_time_field("2026-11-26T10:00", 0) == int(datetime(2026, 11, 26, 10, 0).timestamp() * 1000)
    with pytest.raises(ValueError, match="neither"):
        parse_time_field("yesterday", 0)
    assert parse_properties("a=1\n\n b = x=y \n") == {"a": "1", "b": "x=y"}
    with pytest.raises(ValueError, match="name=value"):
        parse_properties("no equals sign")


def test_everything_from_the_cluster_is_escaped() -> None:
    hostile = '<script>alert("x")</script>&'
    html = table(["h<1>"], [[hostile], [3]])
    assert "<script>" not in html and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;" in html
    assert '<td class="num">3</td>' in html
    assert esc(esc("<")) == "&lt;"  # escaped once, not twice
    assert path("topics", "%RETRY%g/x") == "/topics/%25RETRY%25g%2Fx"
    assert link('/x?a="b"', "<t>") == '<a href="/x?a=&quot;b&quot;">&lt;t&gt;</a>'
    whole = page("T<", esc(""), section="/", lines={"error": "<b>bad</b>"})
    assert "<title>T&lt; · rocketq</title>" in whole and "&lt;b&gt;bad&lt;/b&gt;" in whole
