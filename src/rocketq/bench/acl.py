"""``rocketq bench acl``: what ACL costs a producer's send rate.

Two clusters (a NameServer and a broker each, ASYNC_FLUSH) run in child processes (``ClusterProcess``:
their own GIL and core, as in a deployment): one without ACL, one with ``aclEnable=true`` and a
``plain_acl.yml`` whose producer account has PUB on the topic only (not admin: its permissions are
looked up on every send). One asyncio ``Producer`` per cluster, in the bench process, keeps
``in_flight`` sends of ``size``-byte bodies going (``Producer.send``, each awaited by one of
``in_flight`` workers); the ACL one signs every request, the broker checks every signature and
permission. The bench process runs on one CPU and both brokers on the others (``cores_apart``: left to
the scheduler, two identical brokers differed by up to a third in rate). Runs alternate, ``rounds``
times, after one warm-up run of each, so the host's swings hit both alike: plain then ACL in odd rounds,
ACL then plain in even ones, so that neither kind is always the run that starts while the other's broker
still dispatches and flushes what it was just sent. The rounds are split in two halves, each with a new
pair of brokers started in the other order (``start_order_halves``: the broker started second ran slower).
The producers batch waiting sends by default (``ProducerConfig.auto_batch``), which spreads a request's
signing and checking over the messages of its batch; ``auto_batch=False`` (``--no-auto-batch``) measures
one request per message, ACL's cost per request.

``send_plain`` / ``send_acl``: one run each. ``acl_vs_plain``: the median ACL run's rate, with
``plain_msgs_per_s`` (the median plain run's), ``ratio`` (the median over rounds of the ACL run's
rate over the plain run of the same round) and ``cost_pct`` (``100 * (1 - ratio)``: the share of the
send rate that ACL costs; the target is at most 10).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from rocketq.bench import Measurement, Sink, scratch_directory
from rocketq.bench.running import create_topic, run_loop, start_order_halves, started_pair
from rocketq.bench.usage import Usage
from rocketq.client import ClientConfig, Message, Producer, ProducerConfig
from rocketq.client.admin import AdminClient
from rocketq.testing.cluster_process import ClusterProcess

TOPIC = "BenchAcl"
WARMUP_MESSAGES = 2000
ACL_FILE = """
accounts:
  - accessKey: bench-admin
    secretKey: bench-admin-secret
    admin: true
  - accessKey: bench-producer
    secretKey: bench-producer-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: [BenchAcl=PUB]
"""
PRODUCER_KEYS = ("bench-producer", "bench-producer-secret")
ADMIN_KEYS = ("bench-admin", "bench-admin-secret")


@dataclass(frozen=True, slots=True, kw_only=True)
class AclBenchOptions:
    messages: int = 20_000  # per run
    rounds: int = 5
    in_flight: int = 64
    size: int = 100
    auto_batch: bool = True  # the producers' ProducerConfig.auto_batch
    directory: Path | None = None


@dataclass(slots=True)
class _Taken:
    """Per kind ("plain", "acl"), one entry per round, in round order."""

    rates: dict[str, list[float]] = field(default_factory=lambda: {"plain": [], "acl": []})
    cpu: dict[str, list[float]] = field(default_factory=lambda: {"plain": [], "acl": []})  # bench + broker, µs/msg
    broker_cpu: dict[str, list[float]] = field(default_factory=lambda: {"plain": [], "acl": []})  # µs/msg
    pinned: bool = True


async def _create_topic(namesrv_addr: str, keys: tuple[str, str]) -> None:
    async with AdminClient(namesrv_addr, access_key=keys[0], secret_key=keys[1]) as admin:
        await create_topic(admin, TOPIC)


async def _send_run(producer: Producer, messages: int, in_flight: int, size: int) -> float:
    """Send ``messages`` with ``in_flight`` workers; returns the seconds it took."""
    body = b"x" * size
    remaining = messages

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await producer.send(Message(TOPIC, body))

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return time.perf_counter() - began


SETTLE_S = 0.5
"""Pause after each run: the broker's dispatch and flush of the run's last messages end before the next
run starts (on two cores they would slow it down)."""


async def _rounds(
    options: AclBenchOptions, emit: Sink, clusters: dict[str, ClusterProcess], numbers: range, taken: _Taken
) -> None:
    """The rounds ``numbers`` against this pair of clusters, added to ``taken``."""
    plain_addr, acl_addr = clusters["plain"].namesrv_addr, clusters["acl"].namesrv_addr
    await _create_topic(plain_addr, ("", ""))
    await _create_topic(acl_addr, ADMIN_KEYS)
    batching = options.auto_batch
    plain_config = ProducerConfig(
        group="bench-plain", client=ClientConfig(namesrv_addr=plain_addr), auto_batch=batching
    )
    acl_client = ClientConfig(namesrv_addr=acl_addr, access_key=PRODUCER_KEYS[0], secret_key=PRODUCER_KEYS[1])
    acl_config = ProducerConfig(group="bench-acl", client=acl_client, auto_batch=batching)
    async with Producer(plain_config) as plain_producer, Producer(acl_config) as acl_producer:
        producers = {"plain": plain_producer, "acl": acl_producer}
        for producer in producers.values():
            await _send_run(producer, WARMUP_MESSAGES, options.in_flight, options.size)
        for round_number in numbers:
            kinds = ["plain", "acl"] if round_number % 2 else ["acl", "plain"]
            for kind in kinds:
                producer = producers[kind]
                await asyncio.sleep(SETTLE_S)
                before = Usage.now(clusters[kind].pid)
                seconds = await _send_run(producer, options.messages, options.in_flight, options.size)
                usage = Usage.now(clusters[kind].pid).since(before, seconds, options.messages)
                measurement = Measurement.from_counts(
                    f"send_{kind}",
                    options.size,
                    options.messages,
                    seconds,
                    options.messages * options.size,
                    writers=options.in_flight,
                    extra={"round": round_number, "auto_batch": int(batching), **usage},
                )
                taken.rates[kind].append(measurement.msgs_per_s)
                broker_cpu = _number(usage.get("broker_cpu_us_per_msg"))
                taken.cpu[kind].append(_number(usage.get("cpu_us_per_msg")) + broker_cpu)
                taken.broker_cpu[kind].append(broker_cpu)
                emit(measurement)


def _summary(options: AclBenchOptions, taken: _Taken) -> Measurement:
    rates, cpu, broker_cpu = taken.rates, taken.cpu, taken.broker_cpu
    plain_rate, acl_rate = statistics.median(rates["plain"]), statistics.median(rates["acl"])
    # each round's ACL run over its plain run: the pairs share the host's mood of the moment
    ratio = statistics.median(acl / plain for plain, acl in zip(rates["plain"], rates["acl"], strict=True))
    # and the CPU both processes spent per message: steadier on a busy host than the rates
    cpu_ratio = statistics.median(acl / plain for plain, acl in zip(cpu["plain"], cpu["acl"], strict=True))
    return Measurement(
        name="acl_vs_plain",
        size=options.size,
        messages=options.messages,
        writers=options.in_flight,
        seconds=options.messages / acl_rate,
        msgs_per_s=acl_rate,
        mb_per_s=acl_rate * options.size / 1e6,
        extra={
            "plain_msgs_per_s": plain_rate,
            "ratio": ratio,
            "cost_pct": 100 * (1 - ratio),
            "cpu_us_per_msg_plain": statistics.median(cpu["plain"]),
            "cpu_us_per_msg_acl": statistics.median(cpu["acl"]),
            "cpu_cost_pct": 100 * (cpu_ratio - 1),
            "broker_cpu_us_per_msg_plain": statistics.median(broker_cpu["plain"]),
            "broker_cpu_us_per_msg_acl": statistics.median(broker_cpu["acl"]),
            "auto_batch": int(options.auto_batch),
            "pinned": taken.pinned,
        },
    )


def _number(value: float | int | str | None) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


def run_acl_bench(options: AclBenchOptions, emit: Sink) -> None:
    """Run ``rocketq bench acl`` (on uvloop when installed), handing every measurement to ``emit``."""
    taken = _Taken()
    with scratch_directory(options.directory, "acl") as root:
        acl_file = root / "plain_acl.yml"
        acl_file.write_text(ACL_FILE)
        settings = {"acl_enable": True, "acl_file": str(acl_file)}
        for acl_first, numbers in start_order_halves(options.rounds):
            with started_pair(root, settings, acl_first, numbers[0]) as (plain, acl, pinned):
                taken.pinned = taken.pinned and pinned
                run_loop(_rounds(options, emit, {"plain": plain, "acl": acl}, numbers, taken))
    emit(_summary(options, taken))


NOTES = (
    "Sends per second with and without aclEnable (brokers in child processes), runs alternating;",
    "acl_vs_plain: ratio = median over rounds of acl/plain rate; cost_pct = 100 * (1 - ratio);",
    "cpu_cost_pct: the same for the CPU per message of the bench process and its broker together.",
)
