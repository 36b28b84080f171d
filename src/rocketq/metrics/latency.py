"""Request latencies as histograms counted in plain lists, and the handler wrappers that time them.

A ``Histogram`` is a list of bucket counts and a sum, updated on the event loop's thread (one
``bisect`` and two additions per observation); Prometheus samples are made from it only when scraped.
``RpcLatency.observe_answer`` is a remoting server's ``observer`` (``rocketq.remoting.server``): each
answer's time from the request's start is observed under its request and response codes (RocketMQ 5's
``rocketmq_rpc_latency``), and the broker's sends also per topic (``rocketmq_send_cost_time``). Only
servers with metrics on have an observer: with metrics off nothing is timed.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Final

from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode

RPC_BUCKETS_MS: Final = (0.1, 0.5, 1.0, 3.0, 5.0, 10.0, 100.0, 1000.0, 3000.0)
"""``rocketmq_rpc_latency``'s upper bounds (ms): RocketMQ 5's (1, 3, 5, 10, 100, 1000, 3000) and two
finer ones below a millisecond, where most of rocketq's requests are answered."""

SEND_BUCKETS_MS: Final = (0.1, 0.5, 1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0)
"""``rocketmq_send_cost_time``'s upper bounds (ms): RocketMQ 5's producer buckets and two finer ones."""

SEND_CODES: Final = frozenset((RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE))

_REQUEST_NAMES: Final = {int(code): code.name.lower() for code in RequestCode}
_RESPONSE_NAMES: Final = {int(code): code.name.lower() for code in ResponseCode}


def request_code_name(code: int) -> str:
    """RocketMQ's label value for a request code: its constant's name in lower case (the number when unknown)."""
    return _REQUEST_NAMES.get(code) or str(code)


def response_code_name(code: int) -> str:
    """RocketMQ's label value for a response code, as ``request_code_name``."""
    return _RESPONSE_NAMES.get(code) or str(code)


class Histogram:
    """Observations counted per bucket: ``counts[i]`` holds those ``<= bounds[i]`` and above the bound
    before; ``counts[-1]`` those above every bound. Not thread-safe: observe from one thread (or under
    a lock, as ``RpcLatency.observe_threadsafe``)."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value

    def cumulative(self) -> list[tuple[str, float]]:
        """Prometheus buckets: ``(le, observations <= le)``, ending with ``+Inf``."""
        buckets, running = [], 0
        for bound, count in zip((*map(str, self.bounds), "+Inf"), self.counts, strict=True):
            running += count
            buckets.append((bound, float(running)))
        return buckets

    def copy(self) -> Histogram:
        other = Histogram(self.bounds)
        other.counts, other.total = list(self.counts), self.total
        return other


class RpcLatency:
    """Milliseconds from a request's start to its answer, by (request code, response code); and the
    broker's sends by (topic, success). Observed and read on the event loop's thread only."""

    def __init__(self) -> None:
        self.by_codes: dict[tuple[int, int], Histogram] = {}
        self.sends: dict[tuple[str, bool], Histogram] = {}

    def observe_answer(self, request: RemotingCommand, response: RemotingCommand, seconds: float) -> None:
        """A remoting server's ``RequestObserver``: one answer, and a send's also by its topic."""
        ms = seconds * 1000
        code = request.code
        self.observe(code, response.code, ms)
        if code in SEND_CODES:
            fields = request.ext_fields
            topic = fields.get("b") or fields.get("topic") or ""  # SendMessageRequestHeaderV2's short name first
            self.observe_send(topic, response.code == ResponseCode.SUCCESS, ms)

    def observe(self, request_code: int, response_code: int, ms: float) -> None:
        key = (request_code, response_code)
        histogram = self.by_codes.get(key)
        if histogram is None:
            histogram = self.by_codes[key] = Histogram(RPC_BUCKETS_MS)
        histogram.observe(ms)

    def observe_send(self, topic: str, success: bool, ms: float) -> None:
        key = (topic, success)
        histogram = self.sends.get(key)
        if histogram is None:
            histogram = self.sends[key] = Histogram(SEND_BUCKETS_MS)
        histogram.observe(ms)

    def snapshot(self) -> tuple[dict[tuple[int, int], Histogram], dict[tuple[str, bool], Histogram]]:
        """Copies of both tables (taken on the loop's thread)."""
        return (
            {key: h.copy() for key, h in self.by_codes.items()},
            {key: h.copy() for key, h in self.sends.items()},
        )
