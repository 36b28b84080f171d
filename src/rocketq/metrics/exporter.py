"""PromExporter: a Prometheus endpoint (``/metrics``) served by ``prometheus_client``'s WSGI app on a thread.

The server's collectors read a server's state where it lives, on its event loop: ``on_loop`` hands a
function to the loop and waits for its result, so a scrape never races the handlers that update the
counts, and the loop only spends the time to copy them. Formatting the text and answering HTTP
happen on the exporter's threads. Process metrics (CPU, memory, file descriptors, GC) come with
``prometheus_client``'s own collectors.

The exporter's thread sleeps in ``poll`` until a scrape connects: ``prometheus_client.start_http_server``'s
``serve_forever`` wakes twice a second to look for a shutdown request, and each wake-up takes the GIL
from the broker's loop; here closing is said by shutting the listening socket, which wakes the thread.
Each scrape is answered on a thread of its own, as ``prometheus_client``'s server does.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Final, TypeVar
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

T = TypeVar("T")

SNAPSHOT_TIMEOUT_S: Final = 10.0
"""How long a scrape waits for the event loop to copy the state (a scrape that waits longer fails)."""

PROM: Final = "PROM"
DISABLE: Final = "DISABLE"
_NOT_SERVED: Final = ("OTLP_GRPC", "LOG")  # RocketMQ 5's other exporters


class MetricsConfigError(ValueError):
    """``metricsExporterType`` names no exporter."""


def exporter_enabled(exporter_type: str) -> bool:
    """Whether ``metricsExporterType`` asks for the Prometheus endpoint. RocketMQ's OTLP_GRPC and LOG
    exporters are not implemented: they log a warning and export nothing.

    Raises:
        MetricsConfigError: an unknown type.
    """
    kind = exporter_type.strip().upper()
    if kind == PROM:
        return True
    if kind in ("", DISABLE):
        return False
    if kind in _NOT_SERVED:
        log.warning("metricsExporterType=%s is not supported by rocketq (only PROM): no metrics exported", kind)
        return False
    raise MetricsConfigError(f"metricsExporterType={exporter_type!r}: expected PROM or DISABLE")


def on_loop(loop: asyncio.AbstractEventLoop, function: Callable[[], T]) -> T:
    """``function()`` run on ``loop``'s thread, from another thread; its result or its exception.

    Raises:
        TimeoutError: the loop did not run it within ``SNAPSHOT_TIMEOUT_S``.
    """
    future: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        try:
            future.set_result(function())
        except BaseException as error:  # handed to the waiting thread
            future.set_exception(error)

    loop.call_soon_threadsafe(run)
    return future.result(SNAPSHOT_TIMEOUT_S)


class LoopCollector(Collector):
    """A ``prometheus_client`` collector whose metric families are built by ``families`` on ``loop``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, families: Callable[[], list[Metric]]) -> None:
        self._loop = loop
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return on_loop(self._loop, self._families)


class _QuietHandler(WSGIRequestHandler):
    """Answers a scrape without logging it to stderr (as ``prometheus_client``'s server)."""

    def log_message(self, format: str, *args: object) -> None:
        return


class ExporterServer(ThreadingWSGIServer):
    """``prometheus_client``'s thread-per-request WSGI server, told to stop by ``shut``."""

    shut = False


def listen(host: str, port: int, registry: CollectorRegistry) -> ExporterServer:
    """A server of ``registry`` at ``/metrics`` (and any other path, as ``prometheus_client``'s) on
    ``host:port``, in the address family ``host`` needs (IPv6 too), answering each request on a thread."""
    family, _, _, _, address = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[
        0
    ]

    class Server(ExporterServer):
        address_family = family

    server = make_server(str(address[0]), port, make_wsgi_app(registry), Server, handler_class=_QuietHandler)
    assert isinstance(server, ExporterServer)
    return server


def serve_until_shut(server: ExporterServer) -> None:
    """Answer connections until the listening socket is shut (``shut``): blocked in ``poll`` in between,
    without a timeout, so an idle exporter never wakes up."""
    server.timeout = None
    while True:
        try:
            server.handle_request()  # returns after each connection handed to its thread, or an error
        except ValueError:  # the socket was closed: select() of fd -1
            return
        if server.shut:
            return


def shut(server: ExporterServer) -> None:
    """Wake ``serve_until_shut`` for good: shutting a listening socket down wakes the ``poll`` waiting on it
    (Linux), and ``accept`` then fails; where it does not, a connection of our own wakes it."""
    server.shut = True
    try:
        server.socket.shutdown(socket.SHUT_RDWR)
    except OSError:
        host, port = server.server_address[:2]
        with contextlib.suppress(OSError), socket.create_connection((str(host), int(port)), timeout=1.0):
            pass


class PromExporter:
    """Serves ``collectors`` and the process metrics at ``http://host:port/metrics`` (port 0: any free one)."""

    def __init__(self, host: str, port: int, collectors: Iterable[Collector]) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        for collector in collectors:
            self.registry.register(collector)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self._host = host
        self._port = port
        self._server: ExporterServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    async def start(self) -> None:
        """Listen (off the loop: resolving the host may take a while)."""
        server = await asyncio.to_thread(listen, self._host, self._port, self.registry)
        thread = threading.Thread(target=serve_until_shut, args=(server,), name="metrics-exporter", daemon=True)
        thread.start()
        self._server, self._thread = server, thread
        self.port = int(server.server_port)
        log.info("Prometheus metrics at http://%s:%d/metrics", self._host or "0.0.0.0", self.port)

    async def aclose(self) -> None:
        """Stop serving; a scrape in progress may finish (it waits on the loop, so this must not block it)."""
        server, self._server = self._server, None
        if server is None:
            return
        thread = self._thread

        def shutdown() -> None:
            shut(server)
            if thread is not None:
                thread.join(SNAPSHOT_TIMEOUT_S)
            server.server_close()

        await asyncio.to_thread(shutdown)
