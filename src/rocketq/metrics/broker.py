"""The broker's Prometheus metrics, with RocketMQ 5's names, labels and units (docs/metrics.md).

Nothing here runs per message. The send and pull handlers add to plain dicts once per request
(``rocketq.broker.put_traffic``, ``rocketq.broker.consume_rates``); with metrics on, the remoting server
also times each answer (``rocketq.metrics.latency``). A scrape turns those counts, the consumer offsets and the
store's positions into samples: ``families`` runs on the broker's event loop (``on_loop``), the size of
the store's files is summed on the exporter's thread (at most every ``STORAGE_SIZE_REFRESH_S``).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from rocketq.metrics.exporter import LoopCollector, PromExporter
from rocketq.metrics.histograms import HistogramFamily
from rocketq.metrics.latency import RpcLatency, request_code_name, response_code_name

if TYPE_CHECKING:
    from rocketq.broker.server import Broker

BASE_LABELS = ("cluster", "node_type", "node_id")
TOPIC = (*BASE_LABELS, "topic")
GROUP_TOPIC = (*BASE_LABELS, "topic", "consumer_group")
RPC = (*BASE_LABELS, "protocol_type", "request_code", "response_code")
RPC_LATENCY = "rocketmq_rpc_latency"
RPC_LATENCY_HELP = "Milliseconds from a request's start in its handler to its answer."


class BrokerMetrics:
    """A broker's metrics: ``rpc_latency.observe_answer`` is its remoting server's observer, ``start``
    serves ``/metrics`` once the broker serves, ``aclose`` stops that."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.rpc_latency = RpcLatency()
        self.exporter: PromExporter | None = None
        config = broker.config
        node_id = config.broker_name if config.broker_id == 0 else f"{config.broker_name}_{config.broker_id}"
        self.base = (config.broker_cluster_name, "broker", node_id)
        self._rpc = HistogramFamily(RPC_LATENCY, RPC_LATENCY_HELP, RPC)
        self._send_cost = HistogramFamily(
            "rocketmq_send_cost_time",
            "Milliseconds the broker took to store and answer a send, by topic and outcome.",
            (*TOPIC, "invocation_status"),
        )

    @property
    def port(self) -> int:
        """The port ``/metrics`` is served on (0 before ``start``)."""
        return self.exporter.port if self.exporter is not None else 0

    async def start(self) -> None:
        config = self.broker.config
        collectors: list[Collector] = [
            LoopCollector(asyncio.get_running_loop(), self.families),
            StorageSize(config.store_path_root_dir, self.base),
        ]
        self.exporter = PromExporter(
            config.metrics_prom_exporter_host or config.listen_host, config.metrics_prom_exporter_port, collectors
        )
        await self.exporter.start()

    async def aclose(self) -> None:
        if self.exporter is not None:
            await self.exporter.aclose()

    def families(self) -> list[Metric]:
        """Every metric read from the broker's state (on its event loop)."""
        return [*self._traffic(), *self._latency(), *self._consumers(), *self._store(), *self._connections()]

    def _traffic(self) -> Iterable[Metric]:
        broker, base = self.broker, self.base
        puts = broker.context.put_traffic if broker.context is not None else None
        messages_in = CounterMetricFamily("rocketmq_messages_in", "Messages stored by producers' sends.", labels=TOPIC)
        bytes_in = CounterMetricFamily(
            "rocketmq_throughput_in", "Bytes of the records stored by producers' sends.", labels=TOPIC
        )
        if puts is not None:
            sizes = puts.bytes
            for topic, count in puts.messages.items():
                messages_in.add_metric((*base, topic), count)
                bytes_in.add_metric((*base, topic), sizes.get(topic, 0))
        messages_out = CounterMetricFamily(
            "rocketmq_messages_out", "Messages returned to a consumer group's pulls.", labels=GROUP_TOPIC
        )
        bytes_out = CounterMetricFamily(
            "rocketmq_throughput_out",
            "Bytes of the records returned to a consumer group's pulls.",
            labels=GROUP_TOPIC,
        )
        rates = broker.consume_rates
        for (group, topic), count in rates.totals.items():
            messages_out.add_metric((*base, topic, group), count)
            bytes_out.add_metric((*base, topic, group), rates.bytes.get((group, topic), 0))
        return messages_in, bytes_in, messages_out, bytes_out

    def _latency(self) -> Iterable[Metric]:
        by_codes, sends = self.rpc_latency.snapshot()
        base = self.base
        rpc = self._rpc.family(
            ((*base, "remoting", request_code_name(request_code), response_code_name(response_code)), histogram)
            for (request_code, response_code), histogram in sorted(by_codes.items())
        )
        send = self._send_cost.family(
            ((*base, topic, "success" if success else "failure"), histogram)
            for (topic, success), histogram in sorted(sends.items())
        )
        return rpc, send

    def _consumers(self) -> Iterable[Metric]:
        broker, base = self.broker, self.base
        store, topics, rates = broker.store, broker.topics, broker.consume_rates
        lag = GaugeMetricFamily(
            "rocketmq_consumer_lag_messages", "Messages stored and not yet committed by the group.", labels=GROUP_TOPIC
        )
        lag_latency = GaugeMetricFamily(
            "rocketmq_consumer_lag_latency",
            "Milliseconds since the oldest message the group has not committed was stored (0 without lag).",
            labels=GROUP_TOPIC,
        )
        inflight = GaugeMetricFamily(
            "rocketmq_consumer_inflight_messages",
            "Messages the group pulled and has not committed yet.",
            labels=GROUP_TOPIC,
        )
        ready = GaugeMetricFamily(
            "rocketmq_consumer_ready_messages", "Messages stored and not pulled by the group yet.", labels=GROUP_TOPIC
        )
        pairs: dict[tuple[str, str], dict[int, int]] = {
            (group, topic): queues for topic, group, queues in broker.offsets.entries()
        }
        for group, consumers in broker.clients.consumers.items():
            for topic in consumers.subscriptions:
                pairs.setdefault((group, topic), {})
        now_ms = broker.clock.time() * 1000
        pulled = rates.pulled
        for (group, topic), committed in sorted(pairs.items()):
            topic_config = topics.get(topic)
            if topic_config is None:
                continue
            behind = in_flight = not_pulled = 0
            oldest: int | None = None
            for queue_id in range(topic_config.read_queue_nums):
                max_offset = max(0, store.get_max_offset_in_queue(topic, queue_id))
                consumer_offset = max(0, committed.get(queue_id, 0))
                behind += max(0, max_offset - consumer_offset)
                reached = pulled.get((group, topic, queue_id), consumer_offset)
                reached = min(max(reached, consumer_offset), max_offset)
                in_flight += reached - consumer_offset if max_offset > consumer_offset else 0
                not_pulled += max(0, max_offset - reached)
                if max_offset > consumer_offset:
                    stamp = store.get_message_store_timestamp(topic, queue_id, consumer_offset)
                    if stamp is not None and (oldest is None or stamp < oldest):
                        oldest = stamp
            labels = (*base, topic, group)
            lag.add_metric(labels, behind)
            lag_latency.add_metric(labels, max(0.0, now_ms - oldest) if oldest is not None else 0.0)
            inflight.add_metric(labels, in_flight)
            ready.add_metric(labels, not_pulled)
        return lag, lag_latency, inflight, ready

    def _store(self) -> Iterable[Metric]:
        stats = self.broker.store.stats()
        flush = GaugeMetricFamily(
            "rocketmq_storage_flush_behind_bytes",
            "CommitLog bytes written and not flushed to disk yet.",
            labels=BASE_LABELS,
        )
        flush.add_metric(self.base, max(0, stats.commit_log_max_offset - stats.commit_log_flushed_offset))
        dispatch = GaugeMetricFamily(
            "rocketmq_storage_dispatch_behind_bytes",
            "CommitLog bytes not yet indexed into ConsumeQueues (consumers cannot see them yet).",
            labels=BASE_LABELS,
        )
        dispatch.add_metric(self.base, max(0, stats.commit_log_max_offset - stats.dispatched_offset))
        return flush, dispatch

    def _connections(self) -> Iterable[Metric]:
        broker, base = self.broker, self.base
        connections = GaugeMetricFamily(
            "rocketmq_connections", "Client connections open to the broker (rocketq).", labels=BASE_LABELS
        )
        connections.add_metric(base, len(broker.connections))
        producers = GaugeMetricFamily(
            "rocketmq_producer_connections",
            "Producer connections, by client language.",
            labels=(*BASE_LABELS, "language"),
        )
        by_language: dict[str, int] = {}
        for channels in broker.clients.producers.values():
            for channel in channels.values():
                by_language[channel.language] = by_language.get(channel.language, 0) + 1
        for language, count in sorted(by_language.items()):
            producers.add_metric((*base, language), count)
        consumers = GaugeMetricFamily(
            "rocketmq_consumer_connections",
            "Consumer connections, by group and client language.",
            labels=(*BASE_LABELS, "consumer_group", "language"),
        )
        for group, members in sorted(broker.clients.consumers.items()):
            counts: dict[str, int] = {}
            for channel in members.channels.values():
                counts[channel.language] = counts.get(channel.language, 0) + 1
            for language, count in sorted(counts.items()):
                consumers.add_metric((*base, group, language), count)
        return connections, producers, consumers


STORAGE_SIZE_REFRESH_S: Final = 10.0
"""How old ``rocketmq_storage_size`` may be: the walk of the store's folders (one ``scandir`` per folder,
a ConsumeQueue folder per topic and queue) runs at most this often, not at every scrape."""


class StorageSize(Collector):
    """``rocketmq_storage_size``: bytes of the files under the store's root, summed on the exporter's
    thread (the files' sizes as allocated: a CommitLog file counts in full from its creation), at most
    every ``refresh_s`` of ``clock`` (monotonic seconds); scrapes in between report the last sum."""

    def __init__(
        self,
        root: Path,
        base: tuple[str, ...],
        *,
        clock: Callable[[], float] = time.monotonic,
        refresh_s: float = STORAGE_SIZE_REFRESH_S,
    ) -> None:
        self._root = root
        self._base = base
        self._clock = clock
        self._refresh_s = refresh_s
        self._lock = threading.Lock()  # scrapes may run on several of the exporter's threads at once
        self._size = 0
        self._summed_at: float | None = None

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            now = self._clock()
            if self._summed_at is None or now - self._summed_at >= self._refresh_s:
                self._size, self._summed_at = _tree_size(self._root), now
            total = self._size
        size = GaugeMetricFamily(
            "rocketmq_storage_size", "Bytes of the store's files (CommitLog, ConsumeQueues, index, config).",
            labels=BASE_LABELS,
        )  # fmt: skip
        size.add_metric(self._base, total)
        return [size]


def _tree_size(root: Path) -> int:
    total, folders = 0, [str(root)]
    while folders:
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:  # removed meanwhile (retention), or unreadable
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return total
