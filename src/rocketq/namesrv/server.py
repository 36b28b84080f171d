"""NameServer: a RemotingServer, the NameServer handlers and the expired-broker scan, wired together.

Every NameServer owns its own route table, KV table and connections, so several can run in one
process (tests do) without seeing each other, as real NameServers never talk to each other.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Callable
from types import TracebackType
from typing import Self

from rocketq.metrics.exporter import exporter_enabled
from rocketq.metrics.namesrv import NamesrvMetrics
from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.handlers import NamesrvProcessor
from rocketq.namesrv.kv_config import KVConfigTable
from rocketq.namesrv.route_table import RemovedBroker, RouteTable
from rocketq.remoting import Connection, RemotingServer
from rocketq.remoting.address import listens_beyond_loopback
from rocketq.remoting.tasks import cancel_and_wait

log = logging.getLogger(__name__)


class NameServer:
    """One NameServer. Start it with ``async with NameServer(config) as ns`` or :meth:`start`.

    ``clock`` (seconds, monotonic) is what broker registration times and expiry are measured on.
    Use from one event loop.
    """

    def __init__(self, config: NamesrvConfig | None = None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config if config is not None else NamesrvConfig()
        self._clock = clock
        self.route_table = RouteTable(broker_expiry_s=self.config.broker_expiry_s)
        self.kv_config = KVConfigTable()
        self.processor = NamesrvProcessor(self.route_table, self.kv_config, self.config, clock=clock)
        # with metricsExporterType=PROM (rocketq.metrics); an unknown type is refused here
        enabled = exporter_enabled(self.config.metrics_exporter_type)
        self.metrics = NamesrvMetrics(self.config, self.route_table) if enabled else None
        handlers = self.processor.handlers()
        self._remoting = RemotingServer(
            handlers,
            host=self.config.listen_host,
            port=self.config.listen_port,
            max_frame_size=self.config.max_frame_size,
            limits=self.config.server_limits(),
            on_close=self._connection_closed,
            observer=None if self.metrics is None else self.metrics.rpc_latency.observe_answer,
        )
        self._scan_task: asyncio.Task[None] | None = None
        self._started = False
        self._closed = False

    @property
    def port(self) -> int:
        """The port actually listened on (useful with ``listen_port=0``)."""
        return self._remoting.port

    @property
    def address(self) -> str:
        """``host:port`` that local clients can dial (a wildcard host becomes 127.0.0.1)."""
        host = self.config.listen_host
        if host in ("", "0.0.0.0", "::"):
            host = "127.0.0.1"
        return f"{host}:{self.port}"

    async def start(self) -> None:
        """Listen and start the expired-broker scan."""
        if self._started or self._closed:
            raise RuntimeError("a NameServer can be started only once")
        self._started = True
        await self._remoting.start()
        self._scan_task = asyncio.get_running_loop().create_task(self._scan_loop(), name="namesrv-scan")
        if self.metrics is not None:
            await self.metrics.start(self.address, lambda: len(self._remoting.connections))
        log.info("name server listening on %s:%d", self.config.listen_host, self.port)
        if listens_beyond_loopback(self.config.listen_host):
            log.warning(
                "name server listens on %s:%d, which other machines can reach. A NameServer has no access"
                " control (as in RocketMQ 4.x): anyone who reaches it can register brokers, remove topic"
                " routes and change KV config. Bind it to an internal address (--host, bindAddress) or"
                " firewall the port (docs/acl.md).",
                self.config.listen_host,
                self.port,
            )

    async def aclose(self) -> None:
        """Stop the scan, stop listening and close every connection."""
        if self.metrics is not None:
            await self.metrics.aclose()
        await cancel_and_wait([self._scan_task])
        self._scan_task = None
        if self._started and not self._closed:
            self._closed = True
            port = self.port
            await self._remoting.aclose(grace_s=self.config.shutdown_grace_s)
            log.info("name server on port %d stopped", port)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def scan_expired_brokers(self) -> list[RemovedBroker]:
        """Drop brokers silent for longer than ``broker_expiry_s`` and close their connections."""
        removed = self.route_table.scan_expired(self._clock())
        for broker in removed:
            log.warning(
                "broker %s (%s) in cluster %s expired: no registration for over %.1fs",
                broker.broker_name,
                broker.broker_addr,
                broker.cluster,
                self.config.broker_expiry_s,
            )
            connection = self.processor.connection_of(broker.connection_id)
            if connection is not None:
                connection.close()
        return removed

    async def _scan_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.scan_interval_s)
            try:
                self.scan_expired_brokers()
            except Exception:
                log.exception("expired-broker scan failed")

    def _connection_closed(self, connection: Connection) -> None:
        for broker in self.processor.connection_closed(connection):
            log.info(
                "broker %s (%s) in cluster %s removed: its connection %s closed",
                broker.broker_name,
                broker.broker_addr,
                broker.cluster,
                connection.remote_address,
            )


async def run(config: NamesrvConfig) -> None:
    """Run a NameServer until cancelled or until SIGTERM/SIGINT."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    installed: list[signal.Signals] = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(signum, stop.set)
        except (NotImplementedError, RuntimeError, ValueError):
            continue  # not the main thread, or a platform without signal support in the loop
        installed.append(signum)
    try:
        async with NameServer(config):
            await stop.wait()
            log.info("name server shutting down on signal")
    finally:
        for signum in installed:
            loop.remove_signal_handler(signum)
