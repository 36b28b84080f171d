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
- ``grouped``: the same batches as half messages of one grouped transaction (``TransactionGroup
  .send_batch``, one part per queue) and then the group's commit, until it answered (every message
  visible then). ``ratio`` over ``plain_batch`` (target: at least 0.5); ``commit_ms`` is the commit.

MB = 10**6 bytes of message bodies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocketq.bench import Extra, Measurement, Sink
from rocketq.client import Message, MessageQueue, Producer, TransactionProducer, TransactionState
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageExt
from rocketq.testing.cluster import LocalCluster
from rocketq.testing.cluster_process import ClusterProcess

log = logging.getLogger(__name__)

QUEUES = 8
CLUSTER_NAME = "DefaultCluster"
BROKER_NAME = "broker-a"
TIMEOUT_S = 120.0
OVERRIDES: dict[str, Any] = {
    "mapped_file_size_commit_log": 256 * 1024 * 1024,
    "mapped_file_size_consume_queue": 300_000 * 20,
    "max_hash_slot_num": 500_000,
    "max_index_num": 2_000_000,
}

NOTES = (
    "NameServer and broker (256 MiB CommitLog files, ASYNC_FLUSH) run in a child process (--broker process)",
    "or in this event loop (--broker inline); the producers share this process's event loop.",
    "transactional: half + local transaction (COMMIT) + END_TRANSACTION, timed until all are visible;",
    "grouped: transactional batches of one grouped transaction + its commit. ratio = rate / plain rate.",
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
        rounds: How often the four measurements are taken, one after the other.
        broker: ``"process"`` (a child process) or ``"inline"`` (this event loop).
        directory: Parent of the scratch directory; None for the system temp dir.
    """

    messages: int = 20_000
    size: int = 100
    in_flight: int = 32
    batch: int = 256
    rounds: int = 1
    broker: str = "process"
    directory: Path | None = None


@contextlib.contextmanager
def _scratch(parent: Path | None) -> Iterator[Path]:
    if parent is not None:
        parent.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="rocketq-bench-transactions-", dir=parent))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


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


class TransactionBench:
    def __init__(self, options: TransactionBenchOptions, emit: Sink) -> None:
        self.options = options
        self.emit = emit
        self.namesrv_addr = ""
        self._rates: dict[str, float] = {}

    async def run(self) -> None:
        with _scratch(self.options.directory) as root:
            if self.options.broker == "process":
                with ClusterProcess(root, **OVERRIDES) as child:
                    self.namesrv_addr = child.namesrv_addr
                    await self._rounds()
            else:
                async with LocalCluster(root, **OVERRIDES) as cluster:
                    self.namesrv_addr = cluster.namesrv_addr
                    await self._rounds()

    async def _rounds(self) -> None:
        async with AdminClient(self.namesrv_addr) as admin:
            self._admin = admin
            for index in range(self.options.rounds):
                for name, measure in (
                    ("plain_send", self.plain_send),
                    ("transactional", self.transactional),
                    ("plain_batch", self.plain_batch),
                    ("grouped", self.grouped),
                ):
                    topic = f"Bench{name.title().replace('_', '')}{index}"
                    await self._admin.update_topic(topic, cluster=CLUSTER_NAME, read_queues=QUEUES, write_queues=QUEUES)
                    await self._routed(topic)
                    await measure(topic)

    async def _routed(self, topic: str) -> None:
        deadline = time.monotonic() + 10
        while True:
            route = await self._admin.topic_route(topic)
            if route.queue_datas and all(q.write_queue_nums == QUEUES for q in route.queue_datas):
                return
            if time.monotonic() > deadline:
                raise BenchError(f"the route of {topic} never showed {QUEUES} queues")
            await asyncio.sleep(0.05)

    async def _visible(self, topic: str) -> int:
        return sum(status.max_offset for status in await self._admin.topic_status(topic))

    async def _until_visible(self, topic: str, count: int) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while await self._visible(topic) < count:
            if time.monotonic() > deadline:
                raise BenchError(f"{topic}: {await self._visible(topic)} of {count} messages visible")
            await asyncio.sleep(0.002)

    def _message(self, topic: str, index: int) -> Message:
        return Message(topic, index.to_bytes(8, "big") * max(1, self.options.size // 8))

    def _report(self, name: str, seconds: float, against: str | None, extra: Extra | None = None) -> None:
        count = self.options.messages
        rate = count / max(seconds, 1e-9)
        self._rates[name] = rate
        notes: Extra = dict(extra or {})
        if against is not None and against in self._rates:
            notes["ratio"] = rate / self._rates[against]
        self.emit(
            Measurement.from_counts(
                name, self.options.size, count, seconds, count * self.options.size, batch=self._batch(name),
                writers=self.options.in_flight, extra=notes,
            )
        )  # fmt: skip

    def _batch(self, name: str) -> int:
        return self.options.batch if name in ("plain_batch", "grouped") else 1

    # -- measurements ---------------------------------------------------------------------------------

    async def plain_send(self, topic: str) -> None:
        async with Producer(group="BenchPlain", namesrv_addr=self.namesrv_addr) as producer:
            await producer.send(self._message(topic, -1 & 0xFFFF))  # routes known before the clock starts
            began = time.perf_counter()
            await _in_flight(
                self.options.messages, self.options.in_flight, lambda i: producer.send(self._message(topic, i))
            )
            seconds = time.perf_counter() - began
        self._report("plain_send", seconds, None)

    async def transactional(self, topic: str) -> None:
        async def commit(message: Message, arg: object) -> TransactionState:
            return TransactionState.COMMIT

        def never(message: MessageExt) -> TransactionState:
            return TransactionState.COMMIT

        async with TransactionProducer(
            local_transaction=commit, check=never, group="BenchTransactions", namesrv_addr=self.namesrv_addr
        ) as producer:
            await producer.send_message_in_transaction(self._message(topic, -1 & 0xFFFF))
            await self._until_visible(topic, 1)
            began = time.perf_counter()
            await _in_flight(
                self.options.messages,
                self.options.in_flight,
                lambda i: producer.send_message_in_transaction(self._message(topic, i)),
            )
            await self._until_visible(topic, self.options.messages + 1)
            seconds = time.perf_counter() - began
        self._report("transactional", seconds, "plain_send")

    def _batches(self, topic: str) -> list[list[Message]]:
        size, count = self.options.batch, self.options.messages
        return [
            [self._message(topic, i) for i in range(start, min(count, start + size))] for start in range(0, count, size)
        ]

    async def plain_batch(self, topic: str) -> None:
        batches = self._batches(topic)
        async with Producer(group="BenchPlain", namesrv_addr=self.namesrv_addr) as producer:
            await producer.send(self._message(topic, -1 & 0xFFFF))
            began = time.perf_counter()
            await _in_flight(len(batches), self.options.in_flight, lambda i: producer.send_batch(batches[i]))
            seconds = time.perf_counter() - began
        self._report("plain_batch", seconds, None)

    async def grouped(self, topic: str) -> None:
        batches = self._batches(topic)
        parts: dict[str, int] = {}
        for index, batch in enumerate(batches):
            part = f"{index % QUEUES}-0"
            parts[part] = parts.get(part, 0) + len(batch)
        async with Producer(group="BenchGrouped", namesrv_addr=self.namesrv_addr) as producer:
            await producer.send(self._message(topic, -1 & 0xFFFF))
            group = producer.transaction_group(f"bench:{topic}")

            async def send(index: int) -> None:
                queue = MessageQueue(topic, BROKER_NAME, index % QUEUES)
                await group.send_batch(batches[index], queue, f"{index % QUEUES}-0")

            began = time.perf_counter()
            await _in_flight(len(batches), self.options.in_flight, send)
            sent = time.perf_counter()
            outcome = await group.commit(BROKER_NAME, parts, timeout=TIMEOUT_S)
            seconds = time.perf_counter() - began
        if outcome.committed != self.options.messages:
            raise BenchError(f"the group committed {outcome.committed} of {self.options.messages} messages")
        self._report("grouped", seconds, "plain_batch", {"commit_ms": (began + seconds - sent) * 1000})


def run_transaction_bench(options: TransactionBenchOptions, emit: Sink) -> None:
    """Run ``rocketq bench transactions`` with ``options``, handing every measurement to ``emit``."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(TransactionBench(options, emit).run())
    else:
        uvloop.run(TransactionBench(options, emit).run())
