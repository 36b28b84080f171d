"""``rocketq bench producer``: what a producer sends per second through rocketq's public client.

Against any NameServer (``namesrv_addr``: rocketq's or Apache RocketMQ's; the topic must exist there or
the brokers must create it), or, without one, against a NameServer and broker started for the run in a
child process (``ClusterProcess``: its own GIL and core, as in a deployment), ASYNC_FLUSH unless
``sync_flush``; then the broker's CPU per message is measured too.

``in_flight`` workers each keep one call going: ``Producer.send`` (``batch`` 1) or ``send_batch`` of
``batch`` messages of ``size`` bytes, on one asyncio loop (uvloop when installed); with ``sync_api``
the workers are threads calling ``SyncProducer``, the blocking facade. After a warm-up second, every
second of the ``duration_s`` run is reported (``producer_second``: messages that second and the p50 /
p99 of its calls' latencies), then the whole run (``producer``: rate, p50 / p99 and ``p999_us``,
CPU per message of this process and of a local broker, and the host's steal).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from rocketq.bench import Measurement, Sink, percentile, scratch_directory
from rocketq.bench.running import CLUSTER_SETTINGS, create_topic, run_loop
from rocketq.bench.usage import Usage
from rocketq.client import ClientConfig, Message, Producer, ProducerConfig, SyncProducer
from rocketq.client.admin import AdminClient
from rocketq.testing.cluster_process import ClusterProcess

WARMUP_S = 1.0
REPORT_EVERY_S = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerBenchOptions:
    """``namesrv_addr`` None: a local cluster in a child process. ``directory``: where its scratch
    directory goes (None: the system temp dir)."""

    namesrv_addr: str | None = None
    topic: str = "BenchProducer"
    size: int = 100
    in_flight: int = 64
    batch: int = 1
    duration_s: float = 10.0
    sync_flush: bool = False
    sync_api: bool = False
    auto_batch: bool = True  # ProducerConfig.auto_batch
    directory: Path | None = None


class Calls:
    """Per-call latencies (ns), one list per worker, so threads never share a list; a reader takes what
    was added since it last looked."""

    def __init__(self, workers: int) -> None:
        self.latencies: list[list[int]] = [[] for _ in range(workers)]
        self._read = [0] * workers

    def since_last(self) -> list[int]:
        """The latencies added since the previous call (list lengths only grow: safe beside threads)."""
        taken: list[int] = []
        for index, calls in enumerate(self.latencies):
            end = len(calls)
            taken.extend(calls[self._read[index] : end])
            self._read[index] = end
        return taken

    def all(self) -> list[int]:
        return [latency for calls in self.latencies for latency in calls]


def _messages(options: ProducerBenchOptions) -> list[Message]:
    body = b"x" * options.size
    return [Message(options.topic, body) for _ in range(options.batch)]


async def run_async_workers(producer: Producer, options: ProducerBenchOptions, seconds: float, calls: Calls) -> None:
    messages = _messages(options)
    one = messages[0]
    deadline = time.perf_counter() + seconds

    async def worker(latencies: list[int]) -> None:
        while time.perf_counter() < deadline:
            began = time.perf_counter_ns()
            if options.batch == 1:
                await producer.send(one)
            else:
                await producer.send_batch(messages)
            latencies.append(time.perf_counter_ns() - began)

    await asyncio.gather(*(worker(latencies) for latencies in calls.latencies))


def _threaded_run(producer: SyncProducer, options: ProducerBenchOptions, seconds: float, calls: Calls) -> None:
    messages = _messages(options)
    one = messages[0]
    deadline = time.perf_counter() + seconds
    failures: list[BaseException] = []

    def worker(latencies: list[int]) -> None:
        try:
            while time.perf_counter() < deadline:
                began = time.perf_counter_ns()
                if options.batch == 1:
                    producer.send(one)
                else:
                    producer.send_batch(messages)
                latencies.append(time.perf_counter_ns() - began)
        except BaseException as error:  # handed to the caller below
            failures.append(error)

    threads = [threading.Thread(target=worker, args=(latencies,), daemon=True) for latencies in calls.latencies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]


def calls_measurement(name: str, options: ProducerBenchOptions, latencies: list[int], seconds: float) -> Measurement:
    """Calls of ``latencies`` (ns; sorted in place) over ``seconds``, counted in messages."""
    messages = len(latencies) * options.batch
    return Measurement.from_counts(
        name,
        options.size,
        messages,
        seconds,
        messages * options.size,
        latencies,
        writers=options.in_flight,
        batch=options.batch,
    )


class Reporter:
    """Emits a ``producer_second`` measurement every second from a thread of its own (the asyncio
    workers and the blocking ones alike keep their loop or threads busy)."""

    def __init__(self, options: ProducerBenchOptions, calls: Calls, emit: Sink) -> None:
        self._options, self._calls, self._emit = options, calls, emit
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._report, name="bench-reporter", daemon=True)

    def __enter__(self) -> Reporter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _report(self) -> None:
        number, last = 0, time.perf_counter()
        while not self._stop.wait(REPORT_EVERY_S):
            now = time.perf_counter()
            number += 1
            second = calls_measurement("producer_second", self._options, self._calls.since_last(), now - last)
            second.extra["second"] = number
            self._emit(second)
            last = now


def _summary(options: ProducerBenchOptions, calls: Calls, seconds: float, usage: dict[str, object]) -> Measurement:
    latencies = calls.all()
    measurement = calls_measurement("producer", options, latencies, seconds)
    measurement.extra.update(
        {
            "p999_us": percentile(latencies, 0.999) / 1000,
            "api": "sync" if options.sync_api else "asyncio",
            "flush": "sync" if options.sync_flush else "async",
            "auto_batch": options.auto_batch,
            **{key: value for key, value in usage.items() if isinstance(value, (int, float, str))},
        }
    )
    return measurement


def _measure(
    options: ProducerBenchOptions, emit: Sink, broker_pid: int | None, run: Callable[[float, Calls], None]
) -> None:
    run(WARMUP_S, Calls(options.in_flight))
    calls = Calls(options.in_flight)
    before = Usage.now(broker_pid)
    began = time.perf_counter()
    with Reporter(options, calls, emit):
        run(options.duration_s, calls)
    seconds = time.perf_counter() - began
    messages = max(1, sum(len(latencies) for latencies in calls.latencies) * options.batch)
    usage = Usage.now(broker_pid).since(before, seconds, messages)
    emit(_summary(options, calls, seconds, dict(usage)))


def _drive(options: ProducerBenchOptions, emit: Sink, namesrv_addr: str, broker_pid: int | None) -> None:
    config = ProducerConfig(
        group="bench-producer", client=ClientConfig(namesrv_addr=namesrv_addr), auto_batch=options.auto_batch
    )
    if options.sync_api:
        with SyncProducer(config) as producer:
            _measure(options, emit, broker_pid, lambda seconds, calls: _threaded_run(producer, options, seconds, calls))
        return

    async def main() -> None:
        async with Producer(config) as producer:
            loop = asyncio.get_running_loop()

            def run(seconds: float, calls: Calls) -> None:
                asyncio.run_coroutine_threadsafe(run_async_workers(producer, options, seconds, calls), loop).result()

            await asyncio.to_thread(_measure, options, emit, broker_pid, run)

    run_loop(main())


async def _create_topic(namesrv_addr: str, topic: str) -> None:
    async with AdminClient(namesrv_addr) as admin:
        await create_topic(admin, topic)


@contextlib.contextmanager
def _local_cluster(options: ProducerBenchOptions) -> Iterator[ClusterProcess]:
    flush = "SYNC_FLUSH" if options.sync_flush else "ASYNC_FLUSH"
    with (
        scratch_directory(options.directory, "producer") as root,
        ClusterProcess(root, flush_disk_type=flush, **CLUSTER_SETTINGS) as cluster,
    ):
        yield cluster


def run_producer_bench(options: ProducerBenchOptions, emit: Sink) -> None:
    """Run ``rocketq bench producer``, handing every measurement to ``emit``."""
    if options.namesrv_addr is not None:
        _drive(options, emit, options.namesrv_addr, None)
        return
    with _local_cluster(options) as cluster:
        run_loop(_create_topic(cluster.namesrv_addr, options.topic))
        _drive(options, emit, cluster.namesrv_addr, cluster.pid)


NOTES = (
    "producer_second: each second of the run; producer: the whole run (p999_us, CPU per message of this",
    "process, and of the broker when it was started here, host_steal: the CPU the hypervisor gave others).",
)
