"""``rocketq bench transactions``: transactional messages against plain sends of the same shape, in the
same run, on one local cluster.

A ``LocalCluster`` (one NameServer, one broker with 256 MiB CommitLog files, ASYNC_FLUSH) runs in a
scratch directory, by default in a child process (``ClusterProcess``: its own GIL and core) or, with
``broker="inline"``, in the bench's event loop. The clients share the bench process's event loop
(uvloop when installed). Each round measures, into topics of 8 queues:

- ``plain_send``: ``messages`` messages sent one per ``Producer.send``, ``in_flight`` at a time.
- ``transactional``: the same through ``TransactionProducer.send_message_in_transaction`` (the half
  message, a coroutine local transaction answering COMMIT, END_TRANSACTION oneway), until the broker
  has made every one visible. ``ratio`` is its rate over ``plain_send``'s (target: at least 0.4).
- ``plain_batch``: the messages sent with ``Producer.send_batch``, ``batch`` a request, ``in_flight``
  requests at a time.
- ``grouped``: the same batches as half messages of a grouped transaction (``TransactionGroup
  .send_batch``, one part per queue), then the group's commit, until it answered (every message
  visible then). ``ratio`` over ``plain_batch`` (target: at least 0.5); ``commit_ms`` is the commits.

The host's speed drifts from one second to the next, so each pair is measured in ``slices``
alternating slices (a slice of plain sends, then one of transactions, ...; each grouped slice is a
transaction group of its own, committed at its end) and each rate is its total over all slices.

MB = 10**6 bytes of message bodies.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from rocketq.bench import Extra, Measurement, Sink, scratch_directory
from rocketq.bench.running import CLUSTER_NAME, CLUSTER_SETTINGS, QUEUES, create_topic, run_loop
from rocketq.client import Message, MessageQueue, Producer, TransactionProducer, TransactionState
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageExt
from rocketq.testing.cluster import LocalCluster
from rocketq.testing.cluster_process import ClusterProcess

log = logging.getLogger(__name__)

BROKER_NAME = "broker-a"
TIMEOUT_S = 120.0

NOTES = (
    "NameServer and broker (256 MiB CommitLog files, ASYNC_FLUSH) run in a child process (--broker process)",
    "or in this event loop (--broker inline); the producers share this process's event loop.",
    "transactional: half + local transaction (COMMIT) + END_TRANSACTION, timed until all are visible;",
    "grouped: transactional batches of a grouped transaction + its commit. ratio = rate / plain rate,",
    "each pair measured in alternating slices (--slices) so that both see the same host.",
    "MB = 10^6 bytes of message bodies.",
)


class BenchError(RuntimeError):
    """A transaction benchmark step did not complete."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionBenchOptions:
    """What ``rocketq bench transactions`` measures.

    Attributes:
        messages: Messages of each measurement.
        size: Body size in bytes.
        in_flight: Sends (or batches) awaited concurrently.
        batch: Messages per batch of ``plain_batch`` and ``grouped``.
        slices: Alternating slices each pair of measurements is taken in.
        rounds: How often the four measurements are taken.
        broker: ``"process"`` (a child process) or ``"inline"`` (this event loop).
        directory: Parent of the scratch directory; None for the system temp dir.
    """

    messages: int = 20_000
    size: int = 100
    in_flight: int = 32
    batch: int = 256
    slices: int = 4
    rounds: int = 1
    broker: str = "process"
    directory: Path | None = None


async def _in_flight(count: int, concurrency: int, step: Callable[[int], Awaitable[object]]) -> None:
    """``step(0..count-1)``, at most ``concurrency`` at a time."""
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
        while next_index < count:
            index = next_index
            next_index += 1
            await step(index)

    await asyncio.gather(*(worker() for _ in range(min(concurrency, count))))


Slice = Callable[[int, int], Awaitable[float]]
"""Measures messages ``[start, end)`` of one measurement; returns its seconds."""


class TransactionBench:
    def __init__(self, options: TransactionBenchOptions, emit: Sink) -> None:
        self.options = options
        self.emit = emit
        self.namesrv_addr = ""
        self._admin: AdminClient | None = None

    async def run(self) -> None:
        with scratch_directory(self.options.directory, "transactions") as root:
            if self.options.broker == "process":
                with ClusterProcess(root, **CLUSTER_SETTINGS) as child:
                    self.namesrv_addr = child.namesrv_addr
                    await self._rounds()
            else:
                async with LocalCluster(root, **CLUSTER_SETTINGS) as cluster:
                    self.namesrv_addr = cluster.namesrv_addr
                    await self._rounds()

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            raise BenchError("the cluster is not running")
        return self._admin

    async def _rounds(self) -> None:
        async with AdminClient(self.namesrv_addr) as admin:
            self._admin = admin
            try:
                for index in range(self.options.rounds):
                    await self._round(index)
            finally:
                self._admin = None

    async def _round(self, index: int) -> None:
        topics = {name: f"Bench{name.title().replace('_', '')}{index}" for name in ("plain", "txn", "batch", "group")}
        for topic in topics.values():
            await create_topic(self.admin, topic, QUEUES, cluster=CLUSTER_NAME)

        async def commit(message: Message, arg: object) -> TransactionState:
            return TransactionState.COMMIT

        async with (
            Producer(group="BenchPlain", namesrv_addr=self.namesrv_addr) as plain,
            TransactionProducer(
                local_transaction=commit, check=_commit_check, group="BenchTransactions", namesrv_addr=self.namesrv_addr
            ) as transactional,
            Producer(group="BenchGrouped", namesrv_addr=self.namesrv_addr) as grouped,
        ):
            for producer, topic in ((plain, topics["plain"]), (plain, topics["batch"]), (grouped, topics["group"])):
                await producer.send(self._message(topic, 0))  # routes known before the clock starts
            await transactional.send_message_in_transaction(self._message(topics["txn"], 0))
            await self._until_visible(topics["txn"], 1)
            singles = await self._pair(
                self._sends(plain, topics["plain"]), self._transactions(transactional, topics["txn"])
            )
            self._report("plain_send", singles[0], None, 1)
            self._report("transactional", singles[1], singles[0], 1)
            commits: list[float] = []
            batches = await self._pair(
                self._batches(plain, topics["batch"]), self._grouped(grouped, topics["group"], index, commits)
            )
            self._report("plain_batch", batches[0], None, self.options.batch)
            self._report("grouped", batches[1], batches[0], self.options.batch, {"commit_ms": sum(commits) * 1000})

    async def _pair(self, first: Slice, second: Slice) -> tuple[float, float]:
        """Both measurements, in alternating slices: (first's seconds, second's seconds)."""
        count, slices = self.options.messages, max(1, min(self.options.slices, self.options.messages))
        bounds = [count * number // slices for number in range(slices + 1)]
        totals = [0.0, 0.0]
        for start, end in itertools.pairwise(bounds):
            totals[0] += await first(start, end)
            totals[1] += await second(start, end)
        return totals[0], totals[1]

    async def _visible(self, topic: str) -> int:
        return sum(status.max_offset for status in await self.admin.topic_status(topic))

    async def _until_visible(self, topic: str, count: int) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while await self._visible(topic) < count:
            if time.monotonic() > deadline:
                raise BenchError(f"{topic}: {await self._visible(topic)} of {count} messages visible")
            await asyncio.sleep(0.002)

    def _message(self, topic: str, index: int) -> Message:
        return Message(topic, index.to_bytes(8, "big") * max(1, self.options.size // 8))

    def _report(self, name: str, seconds: float, against: float | None, batch: int, extra: Extra | None = None) -> None:
        count = self.options.messages
        notes: Extra = dict(extra or {})
        if against is not None:
            notes["ratio"] = against / max(seconds, 1e-9)  # rate over rate: same message count
        self.emit(
            Measurement.from_counts(
                name, self.options.size, count, seconds, count * self.options.size, batch=batch,
                writers=self.options.in_flight, extra=notes,
            )
        )  # fmt: skip

    # -- measurements, slice by slice -----------------------------------------------------------------

    def _sends(self, producer: Producer, topic: str) -> Slice:
        async def measure(start: int, end: int) -> float:
            began = time.perf_counter()
            await _in_flight(
                end - start, self.options.in_flight, lambda i: producer.send(self._message(topic, start + i))
            )
            return time.perf_counter() - began

        return measure

    def _transactions(self, producer: TransactionProducer, topic: str) -> Slice:
        async def measure(start: int, end: int) -> float:
            began = time.perf_counter()
            await _in_flight(
                end - start,
                self.options.in_flight,
                lambda i: producer.send_message_in_transaction(self._message(topic, start + i)),
            )
            await self._until_visible(topic, end + 1)  # END_TRANSACTION is oneway: until the commits show
            return time.perf_counter() - began

        return measure

    def _batch_list(self, topic: str, start: int, end: int) -> list[list[Message]]:
        size = self.options.batch
        return [
            [self._message(topic, i) for i in range(first, min(end, first + size))] for first in range(start, end, size)
        ]

    def _batches(self, producer: Producer, topic: str) -> Slice:
        async def measure(start: int, end: int) -> float:
            batches = self._batch_list(topic, start, end)
            began = time.perf_counter()
            await _in_flight(len(batches), self.options.in_flight, lambda i: producer.send_batch(batches[i]))
            return time.perf_counter() - began

        return measure

    def _grouped(self, producer: Producer, topic: str, round_index: int, commits: list[float]) -> Slice:
        async def measure(start: int, end: int) -> float:
            batches = self._batch_list(topic, start, end)
            group = producer.transaction_group(f"bench:{round_index}:{start}")
            parts: dict[str, int] = {}
            for index, batch in enumerate(batches):
                parts[f"{index % QUEUES}-0"] = parts.get(f"{index % QUEUES}-0", 0) + len(batch)

            async def send(index: int) -> None:
                queue = MessageQueue(topic, BROKER_NAME, index % QUEUES)
                await group.send_batch(batches[index], queue, f"{index % QUEUES}-0")

            began = time.perf_counter()
            await _in_flight(len(batches), self.options.in_flight, send)
            sent = time.perf_counter()
            outcome = await group.commit(BROKER_NAME, parts, timeout=TIMEOUT_S)
            ended = time.perf_counter()
            if outcome.committed != end - start:
                raise BenchError(f"the group committed {outcome.committed} of {end - start} messages")
            commits.append(ended - sent)
            return ended - began

        return measure


def _commit_check(message: MessageExt) -> TransactionState:
    return TransactionState.COMMIT  # every local transaction commits: a check would find it committed


def run_transaction_bench(options: TransactionBenchOptions, emit: Sink) -> None:
    """Run ``rocketq bench transactions`` with ``options``, handing every measurement to ``emit``."""
    run_loop(TransactionBench(options, emit).run())
