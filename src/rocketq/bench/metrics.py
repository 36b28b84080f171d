"""``rocketq bench metrics``: what the Prometheus metrics cost the broker, as send and drain rates and
the broker's CPU per message with metrics on and off.

Two NameServer-and-broker pairs run side by side in child processes (``ClusterProcess``: their own GIL),
one with ``metricsExporterType=PROM`` and one without, for the whole run, on CPUs apart from the bench
process's (``cores_apart``); each round measures both, in
alternating order (off, on; then on, off; ...), so that the host's drift falls on both sides alike, and
the rounds are split in two halves, each with a new pair started in the other order
(``start_order_halves``: the broker started second ran slower):

- ``metrics_send``: ``rocketq bench producer``'s workload against that broker (``in_flight`` calls of
  ``batch`` messages of ``size`` bytes, for ``duration_s`` after a warm-up second); with ``send_rate``,
  single sends paced at that rate to both brokers (``paced_sends``: the same load for both);
- ``metrics_drain``: a new push consumer group reads a topic of ``drain_backlog`` messages (written
  once, before the first round, in batches of 256) from its first offset (``rocketq bench consumer``'s
  ``push_drain``). Every round reads the same messages, so the drains of all rounds compare.

A child process of the bench scrapes the metrics broker's ``/metrics`` every ``scrape_interval_s``
throughout, as a Prometheus server would (every 15 s by default: each second is the harsher case); a
thread of the bench would take the measured client's CPU and GIL on the "on" side only. The rounds
start once its first scrape was answered; a scrape that fails is counted (``failed_scrapes``), and a
child that ends early is an error.
``broker_cpu_us_per_msg`` is the broker process's CPU time per message, from its CPU clock (Linux's
``clock_gettime`` of the process: nanoseconds, and the threads that ended count too, such as those the
exporter answers scrapes on; a drain of a second or two is too short for ``/proc/<pid>/stat``'s 10 ms
ticks). ``metrics_cost`` gives, per phase, each round's on / off ratio (the pairs share the host's mood
of the moment), its median over each start order's rounds, and the geometric mean of those two medians
(``balanced``: each order weighs half, whatever the number of rounds): ``rate_on_vs_off`` (1.0 = no
cost) and ``broker_cpu_on_vs_off`` (the target, a cost of at most 3 %, is at most 1.03).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from rocketq.bench import Extra, Measurement, Sink, scratch_directory
from rocketq.bench.consumer import ConsumerBench
from rocketq.bench.consumer_options import ConsumerBenchOptions
from rocketq.bench.producer import ProducerBenchOptions, run_producer_bench
from rocketq.bench.running import create_topic, run_loop, start_order_halves, started_pair
from rocketq.bench.usage import process_cpu_ns
from rocketq.client import Message, Producer
from rocketq.client.admin import AdminClient
from rocketq.testing.cluster_process import ClusterProcess

TOPIC = "BenchMetrics"
DRAIN_TOPIC = "BenchMetricsDrain"
QUEUES = 8
FILL_BATCH = 256
FILL_IN_FLIGHT = 4
METRICS_ON = {"metrics_exporter_type": "PROM", "metrics_prom_exporter_port": 0}
SCRAPER_EXIT_S = 35.0  # a scrape in progress may take up to its 30 s timeout
FIRST_SCRAPE_S = 60.0  # how long the scraper child tries before its first scrape is answered


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricsBenchOptions:
    rounds: int = 6  # 3 per start order
    duration_s: float = 5.0
    size: int = 100
    in_flight: int = 64
    batch: int = 1
    scrape_interval_s: float = 1.0
    drain_backlog: int = 1_000_000
    directory: Path | None = None
    send_rate: int = 0  # messages a second for both brokers (paced_sends); 0: as fast as each takes them


class Scraper:
    """GETs ``/metrics`` every ``interval_s`` from a child process, as a Prometheus server would (from a
    process of its own: a thread of the bench would take the measured client's CPU and GIL on the "on"
    side only), and counts the scrapes, their time and the last one's size. Entering returns once the
    child's first scrape was answered, so every scraper scrapes at least once however short the rounds
    and however late the child gets the CPU. The child may run on any CPU in ``cpus`` (by default the
    ones it inherits).

    Raises:
        RuntimeError: The child ended before a scrape was answered, or without its counts.
    """

    def __init__(self, port: int, interval_s: float, cpus: set[int] | None = None) -> None:
        self._args = [sys.executable, "-c", SCRAPER_CHILD, f"http://127.0.0.1:{port}/metrics", str(interval_s)]
        self._cpus = cpus
        self._process: subprocess.Popen[str] | None = None
        self.scrapes = 0
        self.seconds = 0.0
        self.bytes = 0
        self.failed = 0  # scrapes that got no answer (an error, or no answer within the timeout)

    def __enter__(self) -> Scraper:
        self._process = process = subprocess.Popen(
            self._args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )  # fmt: skip
        if self._cpus and hasattr(os, "sched_setaffinity"):
            with contextlib.suppress(OSError):
                os.sched_setaffinity(process.pid, self._cpus)
        assert process.stdout is not None
        if process.stdout.readline().strip() != "ready":  # its imports done and its first scrape answered
            self._process = None
            process.kill()
            raise RuntimeError(f"the scraper child ended (status {process.wait()}) before a scrape was answered")
        return self

    def __exit__(self, *exc: object) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        try:
            output, _ = process.communicate("", timeout=SCRAPER_EXIT_S)  # its stdin closes: it stops
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
        if process.returncode != 0 or not output.strip():
            raise RuntimeError(f"the scraper child ended with status {process.returncode} and no counts")
        self.scrapes, self.seconds, self.bytes, self.failed = json.loads(output)


def scrape_until_stdin_closes(url: str, interval_s: float) -> tuple[int, float, int, int]:
    """The scraper child's loop: GETs ``url`` until it answers (every ``interval_s``, up to
    ``FIRST_SCRAPE_S``), prints ``ready``, then GETs it every ``interval_s`` until its stdin closes;
    returns ``(scrapes answered, seconds spent in them, bytes of the last one, scrapes not answered)``.

    Raises:
        RuntimeError: No scrape was answered within ``FIRST_SCRAPE_S``.
    """
    closed = threading.Event()

    def watch() -> None:
        sys.stdin.read()
        closed.set()

    threading.Thread(target=watch, daemon=True).start()
    scrapes, seconds, size, failed = 0, 0.0, 0, 0
    give_up = time.monotonic() + FIRST_SCRAPE_S
    while True:
        began = time.perf_counter()
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                size = len(response.read())
        except OSError as error:  # (URLError, HTTPError and timeouts are OSErrors)
            failed += 1
            if not scrapes and time.monotonic() > give_up:
                raise RuntimeError(f"{url}: no scrape answered in {FIRST_SCRAPE_S:.0f} s") from error
        else:
            seconds += time.perf_counter() - began
            scrapes += 1
            if scrapes == 1:
                print("ready", flush=True)
        if closed.wait(interval_s):
            return scrapes, seconds, size, failed


SCRAPER_CHILD = (
    "import json, sys; from rocketq.bench.metrics import scrape_until_stdin_closes as run; "
    "print(json.dumps(run(sys.argv[1], float(sys.argv[2]))))"
)


def broker_cpu_s(pid: int) -> float:
    """CPU seconds process ``pid`` has used, all its threads including those that ended (the exporter
    answers each scrape on a thread of its own), to the nanosecond (Linux; 0 elsewhere)."""
    return process_cpu_ns(pid) / 1e9


async def prepare_topics(namesrv_addr: str, size: int, backlog: int) -> None:
    """The send topic, and the drain topic holding ``backlog`` messages."""
    async with AdminClient(namesrv_addr) as admin:
        await create_topic(admin, TOPIC, QUEUES)
        await create_topic(admin, DRAIN_TOPIC, QUEUES)
    await _fill(namesrv_addr, size, backlog)


async def _fill(namesrv_addr: str, size: int, backlog: int) -> None:
    """Add batches to the drain topic until it holds ``backlog`` messages."""
    missing = backlog - await _stored(namesrv_addr)
    if missing <= 0:
        return
    batch = [Message(DRAIN_TOPIC, b"x" * size) for _ in range(FILL_BATCH)]
    async with Producer(group="bench-metrics-fill", namesrv_addr=namesrv_addr) as producer:
        calls = -(-missing // FILL_BATCH)
        limit = asyncio.Semaphore(FILL_IN_FLIGHT)

        async def send() -> None:
            async with limit:
                await producer.send_batch(batch)

        await asyncio.gather(*(send() for _ in range(calls)))


async def _stored(namesrv_addr: str) -> int:
    async with AdminClient(namesrv_addr) as admin:
        return sum(queue.max_offset - queue.min_offset for queue in await admin.topic_status(DRAIN_TOPIC))


async def paced_sends(
    cluster: ClusterProcess, rate: int, duration_s: float, size: int, in_flight: int
) -> tuple[int, float, float]:
    """Single sends of ``size`` bytes to ``cluster`` at ``rate`` a second for ``duration_s`` (after a
    warm-up second at the same rate), up to ``in_flight`` at once, the i-th due ``i / rate`` seconds after
    the first (a late one is sent at once: the schedule does not drift); returns (messages, seconds, the
    broker's CPU seconds) of the measured part. Both brokers of a round get the same load, so their CPU
    per message compares at the same rate (a broker's CPU per message grows when it is sent fewer)."""
    message = Message(TOPIC, b"x" * size)
    async with Producer(group="bench-metrics-paced", namesrv_addr=cluster.namesrv_addr) as producer:

        async def schedule(count: int) -> float:
            began, issued = time.perf_counter(), 0

            async def sender() -> None:
                nonlocal issued
                while issued < count:
                    index, issued = issued, issued + 1
                    delay = began + index / rate - time.perf_counter()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    await producer.send(message)

            await asyncio.gather(*(sender() for _ in range(min(in_flight, count))))
            return time.perf_counter() - began

        await schedule(rate)  # the warm-up second: routes, connections
        count = max(1, round(rate * duration_s))
        before = broker_cpu_s(cluster.pid)
        seconds = await schedule(count)
        return count, seconds, broker_cpu_s(cluster.pid) - before


class MetricsBench:
    def __init__(self, options: MetricsBenchOptions, emit: Sink) -> None:
        self.options = options
        self.emit = emit
        self.rates: dict[tuple[str, bool], list[float]] = {}
        self.broker_cpu: dict[tuple[str, bool], list[float]] = {}
        self.on_first: list[bool] = []  # per round (in order): whether its pair started the metrics broker first

    def run(self) -> None:
        options = self.options
        cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        scrapes: list[Scraper] = []
        with scratch_directory(options.directory, "metrics") as root:
            for on_first, numbers in start_order_halves(options.rounds):
                with started_pair(root, METRICS_ON, on_first, numbers[0]) as (off, on, _):
                    clusters = {False: off, True: on}
                    for cluster in clusters.values():
                        run_loop(prepare_topics(cluster.namesrv_addr, options.size, options.drain_backlog))
                    if not on.metrics_port:
                        raise RuntimeError("the broker started with metricsExporterType=PROM serves no /metrics")
                    with Scraper(on.metrics_port, options.scrape_interval_s, cpus) as scraper:
                        for number in numbers:
                            self.on_first.append(on_first)
                            order = (False, True) if number % 2 else (True, False)
                            for metrics in order:
                                self._send(clusters[metrics], number, metrics)
                            for metrics in order:
                                self._drain(clusters[metrics], number, metrics)
                    scrapes.append(scraper)
        self._report_scrapes(scrapes)
        self._summary()

    def _report_scrapes(self, scrapers: list[Scraper]) -> None:
        count = sum(scraper.scrapes for scraper in scrapers)
        if not count:
            return
        seconds = sum(scraper.seconds for scraper in scrapers)
        size = scrapers[-1].bytes
        failed = sum(scraper.failed for scraper in scrapers)
        extra: Extra = {"ms_per_scrape": seconds / count * 1000, "bytes": size, "failed_scrapes": failed}
        self.emit(Measurement.from_counts("metrics_scrape", None, count, seconds, size * count, extra=extra))

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
        if options.send_rate:
            messages, seconds, cpu_s = run_loop(
                paced_sends(cluster, options.send_rate, options.duration_s, options.size, options.in_flight)
            )
            measurement = Measurement.from_counts(
                "metrics_send", options.size, messages, seconds, messages * options.size
            )
            self._record("send", metrics, measurement, cpu_s, number)
            return
        taken: list[Measurement] = []
        producer = ProducerBenchOptions(
            namesrv_addr=cluster.namesrv_addr, topic=TOPIC, size=options.size, in_flight=options.in_flight,
            batch=options.batch, duration_s=options.duration_s,
        )  # fmt: skip
        before = broker_cpu_s(cluster.pid)
        run_producer_bench(producer, lambda m: taken.append(m) if m.name == "producer" else None)
        cpu_s = broker_cpu_s(cluster.pid) - before  # (the warm-up second's sends too: a small overcount)
        self._record("send", metrics, taken[-1], cpu_s, number)

    def _drain(self, cluster: ClusterProcess, number: int, metrics: bool) -> None:
        taken: list[Measurement] = []
        bench = ConsumerBench(ConsumerBenchOptions(backlog=self.options.drain_backlog, members=(1,)), taken.append)
        bench.namesrv_addr = cluster.namesrv_addr
        group = f"bench-metrics-drain-{number}"  # a new group each round: it reads the topic from the start
        before = broker_cpu_s(cluster.pid)
        run_loop(bench.drain(DRAIN_TOPIC, self.options.size, 1, float(self.options.size), group=group))
        self._record("drain", metrics, taken[-1], broker_cpu_s(cluster.pid) - before, number)

    def _summary(self) -> None:
        for phase in ("send", "drain"):
            off, on = self.rates.get((phase, False)), self.rates.get((phase, True))
            if not off or not on:
                continue
            cpu_off, cpu_on = self.broker_cpu[(phase, False)], self.broker_cpu[(phase, True)]
            # each round's on over its off: the two runs of a round share the host's mood of the moment
            rates = [b / a for a, b in zip(off, on, strict=True)]
            cpus = [b / a if a else math.nan for a, b in zip(cpu_off, cpu_on, strict=True)]
            extra: Extra = {"phase": phase, "rounds": len(on)}
            for name, ratios in (("rate_on_vs_off", rates), ("broker_cpu_on_vs_off", cpus)):
                by_order = balanced(ratios, self.on_first[: len(ratios)])
                extra[name] = by_order.get("balanced")
                extra[f"{name}_on_started_first"] = by_order.get("on_first")
                extra[f"{name}_on_started_second"] = by_order.get("on_second")
            extra |= {
                "median_off": statistics.median(off),
                "median_on": statistics.median(on),
                "broker_cpu_us_per_msg_off": statistics.median(cpu_off),
                "broker_cpu_us_per_msg_on": statistics.median(cpu_on),
            }
            self.emit(Measurement(name="metrics_cost", messages=0, seconds=0.0, msgs_per_s=statistics.median(on),
                                  mb_per_s=0.0, size=self.options.size, extra=extra))  # fmt: skip


def balanced(ratios: list[float], on_first: list[bool]) -> dict[str, float]:
    """Rounds' on / off ratios summed up fairly to both start orders (the broker started second of a
    pair ran slower on this host): ``on_first`` and ``on_second``, the median of the rounds whose pair
    started the metrics broker first / second; ``balanced``, the geometric mean of the two (the one
    median present when a run had one order only). Ratios that are not numbers are left out."""
    result: dict[str, float] = {}
    for key, first in (("on_first", True), ("on_second", False)):
        picked = [r for r, f in zip(ratios, on_first, strict=True) if f is first and not math.isnan(r)]
        if picked:
            result[key] = statistics.median(picked)
    if result:
        result["balanced"] = statistics.geometric_mean(result.values())
    return result


def run_metrics_bench(options: MetricsBenchOptions, emit: Sink) -> None:
    """Run ``rocketq bench metrics``, handing every measurement to ``emit``."""
    MetricsBench(options, emit).run()


NOTES = (
    "metrics_send / metrics_drain: one run each against the broker with metrics off and the one with them on",
    "per round, alternating; /metrics scraped every --scrape-interval s throughout. metrics_cost: each round's",
    "on / off, its median per start order of the pair and their geometric mean: rate_on_vs_off (1.0 = free),",
    "broker_cpu_on_vs_off (CPU per message).",
)
