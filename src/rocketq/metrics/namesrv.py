"""The NameServer's Prometheus metrics (docs/metrics.md): its requests' latency as the broker's
(``rocketmq_rpc_latency``, ``node_type="nameserver"``), its connections, the brokers and topics it
routes, and the process metrics. Read on the NameServer's event loop when scraped."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from rocketq.metrics.broker import BASE_LABELS, RPC, RPC_LATENCY, RPC_LATENCY_HELP
from rocketq.metrics.exporter import LoopCollector, PromExporter
from rocketq.metrics.histograms import HistogramFamily
from rocketq.metrics.latency import RpcLatency, request_code_name, response_code_name
from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.route_table import RouteTable


class NamesrvMetrics:
    """``rpc_latency.observe_answer`` is the remoting server's observer; ``start`` serves ``/metrics``
    given the NameServer's address and a count of its open connections; ``aclose`` stops serving."""

    def __init__(self, config: NamesrvConfig, routes: RouteTable) -> None:
        self.config = config
        self.routes = routes
        self.rpc_latency = RpcLatency()
        self.exporter: PromExporter | None = None
        self.base: tuple[str, str, str] = ("", "nameserver", "")
        self._connections: Callable[[], int] = lambda: 0
        self._rpc = HistogramFamily(RPC_LATENCY, RPC_LATENCY_HELP, RPC)

    @property
    def port(self) -> int:
        """The port ``/metrics`` is served on (0 before ``start``)."""
        return self.exporter.port if self.exporter is not None else 0

    async def start(self, address: str, connections: Callable[[], int]) -> None:
        """Serve; ``address`` (``host:port`` of the NameServer) is the ``node_id`` label."""
        self.base, self._connections = ("", "nameserver", address), connections
        loop = asyncio.get_running_loop()
        host = self.config.metrics_prom_exporter_host or self.config.listen_host
        self.exporter = PromExporter(host, self.config.metrics_prom_exporter_port, [LoopCollector(loop, self.families)])
        await self.exporter.start()

    async def aclose(self) -> None:
        if self.exporter is not None:
            await self.exporter.aclose()

    def families(self) -> list[Metric]:
        return [*self._latency(), *self._routes()]

    def _latency(self) -> Iterable[Metric]:
        by_codes, _ = self.rpc_latency.snapshot()
        rpc = self._rpc.family(
            ((*self.base, "remoting", request_code_name(request_code), response_code_name(response_code)), histogram)
            for (request_code, response_code), histogram in sorted(by_codes.items())
        )
        return [rpc]

    def _routes(self) -> Iterable[Metric]:
        connections = GaugeMetricFamily(
            "rocketmq_connections", "Connections open to the NameServer (brokers and clients).", labels=BASE_LABELS
        )
        connections.add_metric(self.base, self._connections())
        info = self.routes.cluster_info()
        brokers = GaugeMetricFamily(
            "rocketmq_namesrv_brokers",
            "Broker addresses registered and live, by cluster (rocketq).",
            labels=BASE_LABELS,
        )
        by_cluster: dict[str, int] = {}
        for cluster, names in info.cluster_addr_table.items():
            for name in names:
                data = info.broker_addr_table.get(name)
                by_cluster[cluster] = by_cluster.get(cluster, 0) + (len(data.broker_addrs) if data else 0)
        for cluster, count in sorted(by_cluster.items()):
            brokers.add_metric((cluster, *self.base[1:]), count)
        topics = GaugeMetricFamily(
            "rocketmq_namesrv_topics", "Topics with a route on this NameServer (rocketq).", labels=BASE_LABELS
        )
        topics.add_metric(self.base, len(self.routes.all_topics()))
        return connections, brokers, topics
