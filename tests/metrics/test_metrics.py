"""Prometheus metrics of a real broker and NameServer, scraped over HTTP (rocketq.metrics)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client.metrics_core import HistogramMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from rocketq.broker.config import BrokerConfig
from rocketq.broker.server import Broker
from rocketq.client import (
    ClientConfig,
    ConsumeFromWhere,
    ConsumerConfig,
    Message,
    Producer,
    ProducerConfig,
    PushConsumer,
)
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageExt
from rocketq.metrics.broker import StorageSize
from rocketq.metrics.exporter import MetricsConfigError, PromExporter, exporter_enabled
from rocketq.metrics.histograms import HistogramFamily
from rocketq.metrics.latency import RPC_BUCKETS_MS, SEND_BUCKETS_MS, Histogram, RpcLatency
from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.server import NameServer
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode, make_response
from rocketq.testing import LocalCluster, eventually

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-rocketq.json"

PROM = {"metrics_exporter_type": "PROM", "metrics_prom_exporter_port": 0}

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(port: int) -> Samples:
    """Every sample at ``/metrics``, by (name, labels other than the broker's own)."""

    def get() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            assert response.status == 200
            return str(response.read().decode())

    text = await asyncio.to_thread(get)
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = frozenset((k, v) for k, v in sample.labels.items() if k not in ("cluster", "node_type", "node_id"))
            samples[(sample.name, labels)] = sample.value
    return samples


def dashboard_names() -> set[str]:
    """The metric names docs/grafana-rocketq.json queries (in its panels and variables)."""
    document = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    texts = [target["expr"] for panel in document["panels"] for target in panel.get("targets", [])]
    texts += [variable["definition"] for variable in document["templating"]["list"] if "definition" in variable]
    assert texts
    return {name for text in texts for name in re.findall(r"\b(?:rocketmq|process)_[a-z_]+", text)}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset(labels.items()))]


def consumer(cluster: LocalCluster, group: str, listener: object) -> PushConsumer:
    config = ConsumerConfig(
        group=group,
        client=ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name=f"c{time.monotonic_ns()}"),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        rebalance_interval_s=1.0,
        persist_consumer_offset_interval_s=0.2,
    )
    return PushConsumer(config, listener)  # type: ignore[arg-type]


async def create_topic(cluster: LocalCluster, topic: str) -> None:
    async with AdminClient(cluster.namesrv_addr) as admin:
        await admin.update_topic(topic, cluster="DefaultCluster", read_queues=4, write_queues=4)


async def test_counts_match_what_was_sent_and_consumed_per_topic_and_group(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path, **PROM) as cluster:
        broker = cluster.brokers[0]
        assert broker.metrics is not None and broker.metrics.port > 0
        await create_topic(cluster, "Singles")
        await create_topic(cluster, "Batches")
        client = ClientConfig(namesrv_addr=cluster.namesrv_addr, heartbeat_broker_interval_s=0.1)
        producer = Producer(ProducerConfig(group="P", client=client))
        await producer.start()
        for i in range(30):
            await producer.send(Message("Singles", f"s{i}".encode()))
        for _ in range(4):
            await producer.send_batch([Message("Batches", b"b" * 100) for _ in range(25)])
        received: Counter[str] = Counter()

        def listener(messages: list[MessageExt]) -> None:
            received.update(m.topic for m in messages)

        member = consumer(cluster, "G", listener)
        member.subscribe("Singles")
        await member.start()
        connected: list[Samples] = []
        try:
            await eventually(lambda: received["Singles"] == 30)

            async def both_connected() -> bool:  # the producer heartbeats every 0.1 s, the consumer at start
                connected[:] = [await scrape(broker.metrics.port)]
                names = {name for name, _ in connected[0]}
                return {"rocketmq_producer_connections", "rocketmq_consumer_connections"} <= names

            async with asyncio.timeout(30):
                while not await both_connected():
                    await asyncio.sleep(0.05)
            # (rocketq's clients give their language as JAVA in their requests, as RocketMQ's Java client)
            assert value(connected[0], "rocketmq_consumer_connections", consumer_group="G", language="JAVA") == 1
            assert value(connected[0], "rocketmq_producer_connections", language="JAVA") == 1
            assert value(connected[0], "rocketmq_connections") == 2
        finally:
            await member.aclose()
            await producer.aclose()

        samples = await scrape(broker.metrics.port)
        assert value(samples, "rocketmq_messages_in_total", topic="Singles") == 30
        assert value(samples, "rocketmq_messages_in_total", topic="Batches") == 100
        assert value(samples, "rocketmq_throughput_in_total", topic="Batches") > 100 * 100  # records: body + headers
        assert value(samples, "rocketmq_messages_out_total", topic="Singles", consumer_group="G") == 30
        assert (
            "rocketmq_messages_out_total",
            frozenset({("topic", "Batches"), ("consumer_group", "G")}),
        ) not in samples
        bytes_in = value(samples, "rocketmq_throughput_in_total", topic="Singles")
        assert value(samples, "rocketmq_throughput_out_total", topic="Singles", consumer_group="G") == bytes_in
        sends = value(samples, "rocketmq_rpc_latency_count", protocol_type="remoting", request_code="send_message_v2",
                      response_code="success")  # fmt: skip
        batches = value(samples, "rocketmq_rpc_latency_count", protocol_type="remoting",
                        request_code="send_batch_message", response_code="success")  # fmt: skip
        assert (sends, batches) == (30, 4)
        assert value(samples, "rocketmq_send_cost_time_count", topic="Singles", invocation_status="success") == 30
        assert value(samples, "rocketmq_send_cost_time_bucket", topic="Batches", invocation_status="success",
                     le="+Inf") == 4  # fmt: skip
        assert value(samples, "rocketmq_storage_size") > 0
        assert value(samples, "rocketmq_storage_dispatch_behind_bytes") >= 0
        assert value(samples, "process_cpu_seconds_total") > 0  # the process metrics are there too
        exported = {name for name, _ in samples} | {name for name, _ in connected[0]}
        wanted = {name for name in dashboard_names() if not name.startswith("rocketmq_namesrv_")}
        assert wanted <= exported, wanted - exported  # the Grafana dashboard's queries find these samples


async def test_lag_matches_consumer_progress(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path, **PROM) as cluster:
        broker = cluster.brokers[0]
        assert broker.metrics is not None
        await create_topic(cluster, "Lagging")
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            for i in range(20):
                await producer.send(Message("Lagging", f"a{i}".encode()))
            seen: list[bytes] = []
            member = consumer(cluster, "Slow", lambda messages: seen.extend(m.body for m in messages))
            member.subscribe("Lagging")
            await member.start()
            try:
                await eventually(lambda: len(seen) == 20)
            finally:
                await member.aclose()  # commits its offsets
            for i in range(13):
                await producer.send(Message("Lagging", f"b{i}".encode()))
        async with AdminClient(cluster.namesrv_addr) as admin:
            progress = await admin.consumer_progress("Slow", "Lagging")
        expected = sum(max(0, row.broker_offset - row.consumer_offset) for row in progress)
        assert expected == 13
        samples = await scrape(broker.metrics.port)
        labels = {"topic": "Lagging", "consumer_group": "Slow"}
        assert value(samples, "rocketmq_consumer_lag_messages", **labels) == expected
        assert value(samples, "rocketmq_consumer_ready_messages", **labels) == expected  # none pulled
        assert value(samples, "rocketmq_consumer_inflight_messages", **labels) == 0
        assert value(samples, "rocketmq_consumer_lag_latency", **labels) >= 0


async def test_name_server_serves_its_metrics(tmp_path: Path) -> None:
    config = NamesrvConfig(listen_host="127.0.0.1", listen_port=0, **PROM)  # type: ignore[arg-type]
    async with NameServer(config) as namesrv:
        assert namesrv.metrics is not None
        broker_config = BrokerConfig(
            namesrv_addr=namesrv.address, listen_host="127.0.0.1", listen_port=0, broker_ip1="127.0.0.1",
            store_path_root_dir=tmp_path / "store", mapped_file_size_commit_log=1024 * 1024,
        )  # fmt: skip
        broker = Broker(broker_config)
        await broker.start()
        try:  # start() returns once the broker registered
            samples = await scrape(namesrv.metrics.port)
        finally:
            await broker.aclose()
    registrations = value(samples, "rocketmq_rpc_latency_count", protocol_type="remoting",
                          request_code="register_broker", response_code="success")  # fmt: skip
    assert registrations >= 1
    assert value(samples, "rocketmq_namesrv_brokers") == 1
    assert value(samples, "rocketmq_connections") >= 1
    assert value(samples, "process_cpu_seconds_total") > 0
    exported = {name for name, _ in samples}
    assert {name for name in dashboard_names() if name.startswith("rocketmq_namesrv_")} <= exported


def listening_ports() -> set[int]:
    """TCP ports this process listens on (Linux: its socket inodes matched in /proc/net/tcp{,6})."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        with open(table) as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads Linux's /proc/net/tcp")
async def test_disabled_by_default_no_port_is_opened(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path) as cluster:
        broker = cluster.brokers[0]
        assert broker.metrics is None and cluster.name_servers[0].metrics is None
        ha_port = int(broker.ha_address.rpartition(":")[2])  # (the master's replication port, docs/replication.md)
        assert listening_ports() == {broker.port, ha_port, cluster.name_servers[0].port}


async def test_an_unknown_exporter_type_stops_the_start(tmp_path: Path) -> None:
    with pytest.raises(MetricsConfigError, match="metricsExporterType"):
        NameServer(NamesrvConfig(metrics_exporter_type="GRAPHITE"))
    broker = Broker(BrokerConfig(metrics_exporter_type="GRAPHITE", store_path_root_dir=tmp_path))
    with pytest.raises(MetricsConfigError, match="PROM or DISABLE"):
        await broker.start()
    assert not exporter_enabled("OTLP_GRPC")  # RocketMQ's other exporters: a warning, nothing served
    assert exporter_enabled("prom") and not exporter_enabled("DISABLE")


def test_histogram_buckets_are_cumulative_with_inf() -> None:
    histogram = Histogram((1.0, 5.0))
    for ms in (0.5, 1.0, 3.0, 7.0, 9.0):
        histogram.observe(ms)
    assert histogram.cumulative() == [("1.0", 2.0), ("5.0", 3.0), ("+Inf", 5.0)]
    assert histogram.total == 20.5


def test_answers_are_observed_by_their_codes_and_sends_by_topic_and_outcome() -> None:
    latency = RpcLatency()
    send = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields={"a": "group", "b": "TopicA"})
    legacy_send = RemotingCommand(code=RequestCode.SEND_MESSAGE, ext_fields={"topic": "TopicB"})
    pull = RemotingCommand(code=RequestCode.PULL_MESSAGE, ext_fields={})
    latency.observe_answer(send, make_response(send, ResponseCode.SUCCESS), 0.0001)  # 0.1 ms: on the bound
    latency.observe_answer(send, make_response(send, ResponseCode.SYSTEM_BUSY), 0.002)
    latency.observe_answer(legacy_send, make_response(legacy_send, ResponseCode.SUCCESS), 0.0004)
    latency.observe_answer(pull, make_response(pull, ResponseCode.PULL_NOT_FOUND), 5.0)
    latency.observe(999, -1, 0.2)  # an unknown request code and a negative response code
    by_codes, sends = latency.snapshot()
    assert {key: histogram.cumulative()[-1][1] for key, histogram in by_codes.items()} == {
        (RequestCode.SEND_MESSAGE_V2, ResponseCode.SUCCESS): 1.0,
        (RequestCode.SEND_MESSAGE_V2, ResponseCode.SYSTEM_BUSY): 1.0,
        (RequestCode.SEND_MESSAGE, ResponseCode.SUCCESS): 1.0,
        (RequestCode.PULL_MESSAGE, ResponseCode.PULL_NOT_FOUND): 1.0,
        (999, -1): 1.0,
    }
    assert by_codes[(RequestCode.SEND_MESSAGE_V2, ResponseCode.SUCCESS)].cumulative()[0] == ("0.1", 1.0)
    assert by_codes[(RequestCode.PULL_MESSAGE, ResponseCode.PULL_NOT_FOUND)].cumulative()[-2] == ("3000.0", 0.0)
    assert sorted(sends) == [("TopicA", False), ("TopicA", True), ("TopicB", True)]
    assert sends[("TopicA", False)].total == pytest.approx(2.0)
    assert sends[("TopicB", True)].cumulative()[:2] == [("0.1", 0.0), ("0.5", 1.0)]


def test_storage_size_is_summed_again_once_its_refresh_interval_passed(tmp_path: Path) -> None:
    now = [100.0]
    (tmp_path / "commitlog").mkdir()
    (tmp_path / "commitlog" / "00000000000000000000").write_bytes(b"x" * 1000)
    collector = StorageSize(tmp_path, ("c", "broker", "b"), clock=lambda: now[0], refresh_s=10.0)

    def size() -> float:
        [family] = collector.collect()
        [sample] = family.samples
        return sample.value

    assert size() == 1000
    (tmp_path / "config.json").write_bytes(b"y" * 24)
    now[0] += 9.5
    assert size() == 1000  # the last sum, within the interval
    now[0] += 0.5
    assert size() == 1024


def test_broker_conf_keys_reach_the_config(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("metricsExporterType=PROM\nmetricsPromExporterHost=127.0.0.1\nmetricsPromExporterPort=9557\n")
    config = BrokerConfig.from_file(conf)
    assert (config.metrics_exporter_type, config.metrics_prom_exporter_host, config.metrics_prom_exporter_port) == (
        "PROM", "127.0.0.1", 9557,
    )  # fmt: skip
    assert BrokerConfig().metrics_exporter_type == "DISABLE" and BrokerConfig().metrics_prom_exporter_port == 5557
    namesrv = NamesrvConfig.from_mapping({"metricsExporterType": "PROM", "metricsPromExporterPort": "9558"})
    assert (namesrv.metrics_exporter_type, namesrv.metrics_prom_exporter_port) == ("PROM", 9558)


async def test_the_exporter_serves_scrapes_in_a_row_and_stops_listening_when_closed() -> None:
    exporter = PromExporter("127.0.0.1", 0, [])
    await exporter.start()
    port = exporter.port
    try:
        for _ in range(3):  # the serving thread goes back to waiting after each connection
            samples = await scrape(port)
            assert value(samples, "process_cpu_seconds_total") > 0
    finally:
        await exporter.aclose()  # wakes the thread waiting (without a timeout) for the next scrape
    with pytest.raises(OSError):
        await asyncio.to_thread(urllib.request.urlopen, f"http://127.0.0.1:{port}/metrics", timeout=5)
    await exporter.aclose()  # closing twice is harmless


def test_histogram_families_hold_the_samples_prometheus_client_makes() -> None:
    # HistogramFamily reuses each series' label dicts from one scrape to the next: its samples must be
    # those of prometheus_client's own HistogramMetricFamily.add_metric, at the first scrape and after
    labelnames = ("cluster", "request_code")
    series = [(("c", "send"), Histogram(RPC_BUCKETS_MS)), (("c", "pull"), Histogram(SEND_BUCKETS_MS))]
    family = HistogramFamily("rocketmq_rpc_latency", "help", labelnames)
    for values in ([0.05, 0.7, 2.0, 4000.0], [0.1, 10.0, 250.0]):
        for _, histogram in series:
            for value in values:
                histogram.observe(value)
        expected = HistogramMetricFamily("rocketmq_rpc_latency", "help", labels=labelnames)
        for labels, histogram in series:
            expected.add_metric(labels, histogram.cumulative(), histogram.total)
        made = family.family(series)
        assert made.samples == expected.samples and (made.name, made.type) == (expected.name, expected.type)
