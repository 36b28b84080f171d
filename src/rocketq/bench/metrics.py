"""``rocketq bench metrics``: what the Prometheus metrics cost the broker, as send and drain rates with
metrics on and off.

Each round starts a NameServer and broker in a child process (``ClusterProcess``: its own GIL and
core), once with ``metricsExporterType=PROM`` and once without, in alternating order (off, on; then on,
off; ...) so that the host's drift over the run falls on both sides. In each run:

- ``metrics_send``: ``rocketq bench producer``'s workload against that broker (``in_flight`` calls of
  ``batch`` messages of ``size`` bytes, for ``duration_s`` after a warm-up second);
- ``metrics_drain``: the topic is filled up to ``drain_backlog`` messages (batches of 256), then a new
  push consumer group reads all of it from the first offset (``rocketq bench consumer``'s ``push_drain``).

With metrics on, a thread of the bench scrapes ``/metrics`` every ``scrape_interval_s`` throughout, as a
Prometheus server would (every 15 s by default: each second is the harsher case). ``broker_cpu_us_per_msg``
is the broker process's CPU time per message (every thread, ended ones included, from
``/proc/<pid>/stat``). ``metrics_cost`` compares the medians: ``on / off`` rates (1.0 = no cost) and
the broker's CPU per message.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocketq.bench import Extra, Measurement, Sink, scratch_directory
from rocketq.bench.consumer import ConsumerBench, ConsumerBenchOptions
from rocketq.bench.producer import ProducerBenchOptions, run_producer_bench
from rocketq.bench.running import CLUSTER_SETTINGS, create_topic, run_loop
from rocketq.client import Message, Producer
from rocketq.client.admin import AdminClient
from rocketq.testing.cluster_process import ClusterProcess

TOPIC = "BenchMetrics"
QUEUES = 8
FILL_BATCH = 256
FILL_IN_FLIGHT = 4
METRICS_ON = {"metrics_exporter_type": "PROM", "metrics_prom_exporter_port": 0}


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricsBenchOptions:
    rounds: int = 3
    duration_s: float = 5.0
    size: int = 100
    in_flight: int = 64
    batch: int = 1
    scrape_interval_s: float = 1.0
    drain_backlog: int = 300_000
    directory: Path | None = None


class Scraper:
    """GETs ``/metrics`` every ``interval_s`` from a thread of its own, counting scrapes and their time."""

    def __init__(self, port: int, interval_s: float) -> None:
        self._url = f"http://127.0.0.1:{port}/metrics"
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-scraper", daemon=True)
        self.scrapes = 0
        self.seconds = 0.0
        self.bytes = 0

    def __enter__(self) -> Scraper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            began = time.perf_counter()
            with urllib.request.urlopen(self._url, timeout=30) as response:
                self.bytes = len(response.read())
            self.seconds += time.perf_counter() - began
            self.scrapes += 1


def process_cpu_s(pid: int) -> float:
    """CPU time (user + system) of process ``pid`` so far, threads that ended included (Linux; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


async def _create_topic(namesrv_addr: str) -> None:
    async with AdminClient(namesrv_addr) as admin:
        await create_topic(admin, TOPIC, QUEUES)


async def _fill(namesrv_addr: str, size: int, backlog: int) -> None:
    """Add batches to the topic until it holds ``backlog`` messages (the send phase's are counted)."""
    missing = backlog - await _stored(namesrv_addr)
    if missing <= 0:
        return
    batch = [Message(TOPIC, b"x" * size) for _ in range(FILL_BATCH)]
    async with Producer(group="bench-metrics-fill", namesrv_addr=namesrv_addr) as producer:
        calls = -(-missing // FILL_BATCH)
        limit = asyncio.Semaphore(FILL_IN_FLIGHT)

        async def send() -> None:
            async with limit:
                await producer.send_batch(batch)

        await asyncio.gather(*(send() for _ in range(calls)))


async def _stored(namesrv_addr: str) -> int:
    async with AdminClient(namesrv_addr) as admin:
        return sum(queue.max_offset - queue.min_offset for queue in await admin.topic_status(TOPIC))


class MetricsBench:
    def __init__(self, options: MetricsBenchOptions, emit: Sink) -> None:
        self.options = options
        self.emit = emit
        self.rates: dict[tuple[str, bool], list[float]] = {}
        self.broker_cpu: dict[tuple[str, bool], list[float]] = {}

    def run(self) -> None:
        for number in range(self.options.rounds):
            for metrics in (False, True) if number % 2 == 0 else (True, False):
                self._one(number + 1, metrics)
        self._summary()

    def _one(self, number: int, metrics: bool) -> None:
        options = self.options
        overrides: dict[str, Any] = {**CLUSTER_SETTINGS, **(METRICS_ON if metrics else {})}
        with (
            scratch_directory(options.directory, "metrics") as root,
            ClusterProcess(root, **overrides) as cluster,
        ):
            run_loop(_create_topic(cluster.namesrv_addr))
            scraper = Scraper(cluster.metrics_port, options.scrape_interval_s) if cluster.metrics_port else None
            with scraper or contextlib.nullcontext():
                self._send(cluster, number, metrics)
                self._drain(cluster, number, metrics)
            if scraper is not None and scraper.scrapes:
                self._report_scrapes(scraper, number)

    def _report_scrapes(self, scraper: Scraper, number: int) -> None:
        extra: Extra = {"round": number, "ms_per_scrape": scraper.seconds / scraper.scrapes * 1000}
        extra["bytes"] = scraper.bytes
        total = scraper.bytes * scraper.scrapes
        self.emit(Measurement.from_counts("metrics_scrape", None, scraper.scrapes, scraper.seconds, total, extra=extra))

    def _record(self, phase: str, metrics: bool, measurement: Measurement, cpu_s: float, number: int) -> None:
        per_msg = cpu_s / max(1, measurement.messages) * 1e6
        self.rates.setdefault((phase, metrics), []).append(measurement.msgs_per_s)
        self.broker_cpu.setdefault((phase, metrics), []).append(per_msg)
        extra: Extra = {"metrics": "on" if metrics else "off", "round": number, "broker_cpu_us_per_msg": per_msg}
        measurement.name = f"metrics_{phase}"
        measurement.extra = extra | {key: measurement.extra[key] for key in ("p999_us",) if key in measurement.extra}
        self.emit(measurement)

    def _send(self, cluster: ClusterProcess, number: int, metrics: bool) -> None:
        options = self.options
        taken: list[Measurement] = []
        producer = ProducerBenchOptions(
            namesrv_addr=cluster.namesrv_addr, topic=TOPIC, size=options.size, in_flight=options.in_flight,
            batch=options.batch, duration_s=options.duration_s,
        )  # fmt: skip
        before = process_cpu_s(cluster.pid)
        run_producer_bench(producer, lambda m: taken.append(m) if m.name == "producer" else None)
        cpu_s = process_cpu_s(cluster.pid) - before  # (the warm-up second's sends too: a small overcount)
        self._record("send", metrics, taken[-1], cpu_s, number)

    def _drain(self, cluster: ClusterProcess, number: int, metrics: bool) -> None:
        run_loop(_fill(cluster.namesrv_addr, self.options.size, self.options.drain_backlog))
        total = run_loop(_stored(cluster.namesrv_addr))
        taken: list[Measurement] = []
        bench = ConsumerBench(ConsumerBenchOptions(backlog=total, members=(1,)), taken.append)
        bench.namesrv_addr = cluster.namesrv_addr
        before = process_cpu_s(cluster.pid)
        run_loop(bench.drain(TOPIC, self.options.size, 1, float(self.options.size)))
        self._record("drain", metrics, taken[-1], process_cpu_s(cluster.pid) - before, number)

    def _summary(self) -> None:
        for phase in ("send", "drain"):
            off, on = self.rates.get((phase, False)), self.rates.get((phase, True))
            if not off or not on:
                continue
            cpu_off = statistics.median(self.broker_cpu[(phase, False)])
            cpu_on = statistics.median(self.broker_cpu[(phase, True)])
            rate_off, rate_on = statistics.median(off), statistics.median(on)
            extra: Extra = {
                "phase": phase,
                "rate_on_vs_off": rate_on / rate_off,
                "broker_cpu_on_vs_off": cpu_on / cpu_off if cpu_off else None,
                "median_off": rate_off,
                "median_on": rate_on,
            }
            self.emit(Measurement(name="metrics_cost", messages=0, seconds=0.0, msgs_per_s=rate_on, mb_per_s=0.0,
                                  size=self.options.size, extra=extra))  # fmt: skip


def run_metrics_bench(options: MetricsBenchOptions, emit: Sink) -> None:
    """Run ``rocketq bench metrics``, handing every measurement to ``emit``."""
    MetricsBench(options, emit).run()


NOTES = (
    "metrics_send / metrics_drain: one run each with metrics off and on per round, alternating; on = /metrics",
    "scraped every --scrape-interval s throughout. metrics_cost: medians, rate_on_vs_off (1.0 = free) and the",
    "broker process's CPU per message on / off.",
)
