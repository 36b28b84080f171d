"""The dashboard's arithmetic, apart from any I/O: message rates, lag, system topics, time fields.

A rate is either what a broker reports (RocketMQ's ``putTps`` / ``getTransferedTps`` runtime keys) or
computed here from two readings of a counter it reports (``put_messages`` / ``get_messages``) taken at
least ``RateMeter.min_interval_s`` apart; ``broker_rates`` is the one place that chooses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from rocketq.common.group_topics import DLQ_PREFIX, RETRY_PREFIX

SYSTEM_TOPICS = frozenset(
    {
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "OFFSET_MOVED_EVENT",
        "SELF_TEST_TOPIC",
        "BenchmarkTest",
        "RMQ_SYS_TRACE_TOPIC",
    }
)
"""Topics the brokers make for themselves (RocketMQ's names)."""


def is_system_topic(topic: str, cluster_and_broker_names: Iterable[str] = ()) -> bool:
    """True for the brokers' own topics, the groups' retry and dead-letter topics, and the topics named
    after a cluster or a broker (which RocketMQ's brokers register for routing by name)."""
    return (
        topic in SYSTEM_TOPICS
        or topic.startswith((RETRY_PREFIX, DLQ_PREFIX, "rmq_sys_", "RMQ_SYS_"))
        or topic in set(cluster_and_broker_names)
    )


class RateMeter:
    """Per-second rates of counters read now and then: ``rate(key, count)`` compares ``count`` with the
    reading of ``key`` at least ``min_interval_s`` earlier (``clock``: seconds, monotonic). None until
    there are two readings; a counter that went down (a broker restarted) starts over."""

    def __init__(self, clock: Callable[[], float], min_interval_s: float = 1.0) -> None:
        self._clock = clock
        self.min_interval_s = min_interval_s
        self._readings: dict[object, tuple[float, int]] = {}
        self._rates: dict[object, float] = {}

    def rate(self, key: object, count: int) -> float | None:
        now = self._clock()
        earlier = self._readings.get(key)
        if earlier is None or count < earlier[1]:
            self._readings[key] = (now, count)
            self._rates.pop(key, None)
            return None
        elapsed = now - earlier[0]
        if elapsed >= self.min_interval_s:
            self._rates[key] = (count - earlier[1]) / elapsed
            self._readings[key] = (now, count)
        return self._rates.get(key)


def reported_tps(value: str | None) -> float | None:
    """A RocketMQ TPS runtime value ("12.50 11.20 10.00": the last 10 s, minute and 10 minutes): the
    first figure; None when absent or not a number."""
    if not value:
        return None
    try:
        return float(value.split()[0])
    except ValueError:
        return None


def _counter(table: Mapping[str, str], key: str) -> int | None:
    try:
        return int(table[key])
    except (KeyError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class BrokerRates:
    put_tps: float | None  # messages stored a second; None while measuring
    get_tps: float | None  # messages sent to consumers a second


def broker_rates(address: str, table: Mapping[str, str], meter: RateMeter) -> BrokerRates:
    """The broker's put and get TPS: its ``putTps`` / ``getTransferedTps`` when it reports them, else
    rates of its ``put_messages`` / ``get_messages`` counters between this reading and an earlier one."""

    def tps(reported_key: str, counter_key: str) -> float | None:
        reported = reported_tps(table.get(reported_key))
        if reported is not None:
            return reported
        count = _counter(table, counter_key)
        return None if count is None else meter.rate((address, counter_key), count)

    return BrokerRates(tps("putTps", "put_messages"), tps("getTransferedTps", "get_messages"))


def disk_ratio(table: Mapping[str, str]) -> float | None:
    """How full the broker's store disk is (0 to 1): RocketMQ's ``commitLogDiskRatio``, else rocketq's
    ``disk_used_ratio``."""
    for key in ("commitLogDiskRatio", "disk_used_ratio"):
        try:
            return float(table[key])
        except (KeyError, ValueError):
            continue
    return None


def lag(broker_offset: int, consumer_offset: int) -> int:
    """Messages a group has not consumed from a queue (a group that committed nothing lags by all)."""
    return max(0, broker_offset - max(0, consumer_offset))


def parse_time_field(text: str, now_ms: int) -> int:
    """ms since the epoch from a form field: empty or ``now``, a number of ms, or a local ISO time as a
    browser's datetime-local input sends it (``2026-11-26T10:00``). ValueError says what it accepts."""
    text = text.strip()
    if not text or text == "now":
        return now_ms
    if text.isdigit():
        return int(text)
    try:
        return int(datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError:
        raise ValueError(f"{text!r} is neither a time such as 2026-11-26T10:00 nor ms since the epoch") from None


def parse_properties(text: str) -> dict[str, str]:
    """User properties from a form's ``name=value`` lines (blank lines ignored). ValueError names a line
    without ``=`` or with an empty name."""
    properties: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        name, equals, value = line.partition("=")
        if not equals or not name.strip():
            raise ValueError(f"property line {line!r} is not name=value")
        properties[name.strip()] = value.strip()
    return properties
