"""Request latencies as histograms counted in plain lists, and the handler wrappers that time them.

A ``Histogram`` is a list of bucket counts and a sum, updated on the event loop's thread (one
``bisect`` and two additions per observation); Prometheus samples are made from it only when scraped.
``timed_handlers`` wraps a server's handler table so that each request's time in its handler is
observed in ``RpcLatency`` under its request and response codes (RocketMQ 5's ``rocketmq_rpc_latency``),
and the broker's sends also per topic (``rocketmq_send_cost_time``). Only servers with metrics on are
wrapped: with metrics off the handlers run as they are.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.remoting import Connection, RequestHandler
from rocketq.remoting.server import BlockingHandler

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
    """Milliseconds spent in handlers, by (request code, response code); and the broker's sends by (topic,
    success). Observed on the event loop's thread; blocking handlers observe under a lock."""

    def __init__(self) -> None:
        self.by_codes: dict[tuple[int, int], Histogram] = {}
        self.sends: dict[tuple[str, bool], Histogram] = {}
        self._lock = threading.Lock()

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

    def observe_threadsafe(self, request_code: int, response_code: int, ms: float) -> None:
        with self._lock:
            self.observe(request_code, response_code, ms)

    def snapshot(self) -> tuple[dict[tuple[int, int], Histogram], dict[tuple[str, bool], Histogram]]:
        """Copies of both tables (taken on the loop's thread, under the lock the blocking handlers take)."""
        with self._lock:
            return (
                {key: h.copy() for key, h in self.by_codes.items()},
                {key: h.copy() for key, h in self.sends.items()},
            )


def timed_handlers(
    handlers: Mapping[int, RequestHandler | BlockingHandler], latency: RpcLatency
) -> dict[int, RequestHandler | BlockingHandler]:
    """``handlers`` with each one timed into ``latency``. A request answered later (a held pull: its
    handler returns None) or not at all (oneway) is not observed; a handler that raises is observed
    with SYSTEM_ERROR, which is what the server answers then."""
    timed: dict[int, RequestHandler | BlockingHandler] = {}
    for code, handler in handlers.items():
        if isinstance(handler, BlockingHandler):
            timed[code] = BlockingHandler(_timed_blocking(handler, latency))
        elif code in SEND_CODES:
            timed[code] = _timed_send(handler, latency)
        else:
            timed[code] = _timed(handler, latency)
    return timed


def _timed(handler: RequestHandler, latency: RpcLatency) -> RequestHandler:
    async def handle(request: RemotingCommand, connection: Connection) -> RemotingCommand | None:
        began = time.perf_counter()
        try:
            response = await handler(request, connection)
        except Exception:
            latency.observe(request.code, ResponseCode.SYSTEM_ERROR, (time.perf_counter() - began) * 1000)
            raise
        if response is not None:
            latency.observe(request.code, response.code, (time.perf_counter() - began) * 1000)
        return response

    return handle


def _timed_send(handler: RequestHandler, latency: RpcLatency) -> RequestHandler:
    async def handle(request: RemotingCommand, connection: Connection) -> RemotingCommand | None:
        began = time.perf_counter()
        response = None
        try:
            response = await handler(request, connection)
            return response
        finally:
            ms = (time.perf_counter() - began) * 1000
            code = ResponseCode.SYSTEM_ERROR if response is None else response.code
            latency.observe(request.code, code, ms)
            fields = request.ext_fields
            topic = fields.get("b") or fields.get("topic") or ""  # SendMessageRequestHeaderV2's short name first
            latency.observe_send(topic, code == ResponseCode.SUCCESS, ms)

    return handle


def _timed_blocking(
    handler: BlockingHandler, latency: RpcLatency
) -> Callable[[RemotingCommand, Connection], RemotingCommand | None]:
    function = handler.function

    def handle(request: RemotingCommand, connection: Connection) -> RemotingCommand | None:
        began = time.perf_counter()
        response = None
        try:
            response = function(request, connection)
            return response
        finally:
            if response is not None:
                latency.observe_threadsafe(request.code, response.code, (time.perf_counter() - began) * 1000)

    return handle
