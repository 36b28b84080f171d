"""Request latencies as histograms counted in plain lists, and the handler wrappers that time them.

A ``Histogram`` is a list of bucket counts and a sum, updated on the event loop's thread (a scan of
its few bounds, which stops at the first for most answers, and two additions per observation);
Prometheus samples are made from it only when scraped.
``RpcLatency.observe_answer`` is a remoting server's ``observer`` (``rocketq.remoting.server``): each
answer's time from the request's start is observed under its request and response codes (RocketMQ 5's
``rocketmq_rpc_latency``), and the broker's sends also per topic (``rocketmq_send_cost_time``). Only
servers with metrics on have an observer: with metrics off nothing is timed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode

RPC_BUCKETS_MS: Final = (0.1, 0.5, 1.0, 3.0, 5.0, 10.0, 100.0, 1000.0, 3000.0)
"""``rocketmq_rpc_latency``'s upper bounds (ms): RocketMQ 5's (1, 3, 5, 10, 100, 1000, 3000) and two
finer ones below a millisecond, where most of rocketq's requests are answered."""

SEND_BUCKETS_MS: Final = (0.1, 0.5, 1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0)
"""``rocketmq_send_cost_time``'s upper bounds (ms): RocketMQ 5's producer buckets and two finer ones."""

SEND_CODES: Final = frozenset((RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE))

SUCCESS: Final = int(ResponseCode.SUCCESS)  # a plain int: compiled code compares it without an enum lookup

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
        self.bounds: tuple[float, ...] = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        index = 0  # the first bound >= value (a scan: most answers stop at the first bound)
        for bound in self.bounds:
            if value <= bound:
                break
            index += 1
        self.counts[index] += 1
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
        self._by_codes: dict[int, dict[int, Histogram]] = {}  # by request code, then response code (no tuples)
        self._sent: dict[str, Histogram] = {}  # sends answered SUCCESS, by topic
        self._failed: dict[str, Histogram] = {}  # the other sends, by topic

    def observe_answer(self, request: RemotingCommand, response: RemotingCommand, seconds: float) -> None:
        """A remoting server's ``RequestObserver``: one answer, and a send's also by its topic."""
        ms = seconds * 1000
        code = request.code
        response_code = response.code
        self.observe(code, response_code, ms)
        if code in SEND_CODES:
            fields = request.ext_fields
            topic = fields.get("b") or fields.get("topic") or ""  # SendMessageRequestHeaderV2's short name first
            self.observe_send(topic, response_code == SUCCESS, ms)

    def observe(self, request_code: int, response_code: int, ms: float) -> None:
        by_response = self._by_codes.get(request_code)
        if by_response is None:
            by_response = self._by_codes[request_code] = {}
        histogram = by_response.get(response_code)
        if histogram is None:
            histogram = by_response[response_code] = Histogram(RPC_BUCKETS_MS)
        histogram.observe(ms)

    def observe_send(self, topic: str, success: bool, ms: float) -> None:
        table = self._sent if success else self._failed
        histogram = table.get(topic)
        if histogram is None:
            histogram = table[topic] = Histogram(SEND_BUCKETS_MS)
        histogram.observe(ms)

    def snapshot(self) -> tuple[dict[tuple[int, int], Histogram], dict[tuple[str, bool], Histogram]]:
        """Copies of both tables (taken on the loop's thread): by (request code, response code), and
        the sends by (topic, success)."""
        by_codes = {
            (request_code, response_code): histogram.copy()
            for request_code, by_response in self._by_codes.items()
            for response_code, histogram in by_response.items()
        }
        sends = {(topic, True): histogram.copy() for topic, histogram in self._sent.items()}
        sends.update({(topic, False): histogram.copy() for topic, histogram in self._failed.items()})
        return by_codes, sends
