"""``rocketq bench consumer``: push-consumer drain rate, end-to-end latency and rebalance time.

A ``LocalCluster`` (one NameServer, one broker with 256 MiB CommitLog files, ASYNC_FLUSH) runs in a
scratch directory, by default in a child process (``ClusterProcess``: its own GIL and core, as in a
deployment) or, with ``broker="inline"``, in the bench's own event loop. The producers and every
consumer member share the bench process's event loop (uvloop when installed). For each body size:

- ``backlog_produce``: ``backlog`` messages written through the network with ``Producer.send_batch``
  (``PRODUCE_BATCH`` messages per request, ``PRODUCE_IN_FLIGHT`` requests in flight) into a topic of
  8 queues, until the broker has dispatched all of them.
- ``push_drain``: for each member count, a new group of that many ``PushConsumer`` members with
  CONSUME_FROM_FIRST_OFFSET and a trivial listener recording (queue, offset); the clock runs from the
  first ``start()`` until every backlog message was consumed at least once. ``duplicates`` counts
  deliveries beyond the first (queues handed over between members while the group forms).
- ``e2e_latency``: one producer sends ``rate`` messages per second for ``latency_seconds``, one at a
  time with ``Producer.send`` (each awaited; ``send_rate`` is what it achieved) and
  ``time.perf_counter_ns()`` in a property taken just before the send; one member's listener records
  ``now - sent``. ``cpu_util`` is process CPU time over wall time (1.0 = one core busy);
  ``cpu_us_per_msg`` the bench process's CPU per message (producer and consumer), ``broker_cpu_us_per_msg``
  the broker child's (Linux, ``--broker process``), which the host's noise moves far less than latency.
- ``loopback_echo``: the floor of ``e2e_latency`` on this machine: round trips of 64 bytes to a trivial
  asyncio echo server in a child process, paced at ``rate`` (``rocketq.bench.echo``).
- ``rebalance_join``: one member consumes a steady stream at ``rate``; a second member of the same
  group starts. ``assigned_ms`` is the time from its ``start()`` until both hold non-empty, disjoint
  assignments covering the 8 queues, ``first_message_ms`` until the new member's first message;
  ``seconds`` is the later of the two, ``messages`` what the group consumed meanwhile and
  ``duplicates`` the messages both members got (a queue consumed from a stale committed offset).

- ``pull_drain``: the same backlog read through ``poll()`` by a new group's asyncio ``PullConsumer``,
  then by a blocking ``SyncPullConsumer`` (``rocketq.bench.pull_drain``); the blocking row carries
  ``vs_asyncio``, its rate over the asyncio one's.

``only`` picks some of these (the backlog is written when a drain is picked). With ``namesrv_addr`` no
cluster is started: the bench creates its topics (a run suffix in their names) on ``cluster``'s masters
through the admin client and reads stored bytes and dispatch progress from the runtime info
(``rocketq.bench.running.stored_bytes``); broker CPU is then not measured (docs/producer-path.md).

MB = 10**6 bytes of stored records (CommitLog record bytes, as in ``rocketq bench store``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from rocketq.bench import Extra, Measurement, Sink, percentile, scratch_directory
from rocketq.bench.consumer_options import (
    DRAINS,
    POLL_S,
    PRODUCE_BATCH,
    PRODUCE_BATCH_BYTES,
    PRODUCE_IN_FLIGHT,
    REBALANCE_TIMEOUT_S,
    STALL_TIMEOUT_S,
    WARMUP_MESSAGES,
    BenchError,
    ConsumerBenchOptions,
)
from rocketq.bench.echo import PAYLOAD, measure_echo
from rocketq.bench.pacing import paced
from rocketq.bench.pull_drain import APIS, DrainStalled
from rocketq.bench.pull_drain import drain as pull_drain
from rocketq.bench.recorder import SENT_PROPERTY, STAMP_MARKS, Recorder, mark_sent
from rocketq.bench.running import (
    CLUSTER_SETTINGS,
    QUEUES,
    create_topic,
    dispatch_behind,
    run_loop,
    stored_bytes,
)
from rocketq.bench.usage import Usage
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
from rocketq.client.listener import Listener
from rocketq.remoting.tasks import cancel_and_wait
from rocketq.testing.cluster import LocalCluster
from rocketq.testing.cluster_process import ClusterProcess

log = logging.getLogger(__name__)


class ConsumerBench:
    """Runs every measurement of ``rocketq bench consumer`` and hands each to ``emit``."""

    def __init__(self, options: ConsumerBenchOptions, emit: Sink) -> None:
        self.options = options
        self.emit = emit
        self.namesrv_addr = ""
        self._admin: AdminClient | None = None
        self._drain_rates: dict[int, float] = {}
        self._broker_pid: int | None = None  # the child's, when the broker runs in one
        # topics of an external cluster are new each run (a drain must not read an earlier run's backlog)
        self._suffix = "" if options.namesrv_addr is None else f"-{time.time_ns() // 1_000_000}"

    async def run(self) -> None:
        """All measurements, in a scratch directory that is removed afterwards (against an external
        cluster: no directory, no cluster started)."""
        if self.options.namesrv_addr is not None:
            self.namesrv_addr = self.options.namesrv_addr
            await self._run_sizes()
            return
        overrides = CLUSTER_SETTINGS
        with scratch_directory(self.options.directory, "consumer") as root:
            if self.options.broker == "process":
                with ClusterProcess(root, **overrides) as child:
                    self.namesrv_addr = child.namesrv_addr
                    self._broker_pid = child.pid
                    await self._run_sizes()
            else:
                async with LocalCluster(root, **overrides) as cluster:
                    self.namesrv_addr = cluster.namesrv_addr
                    await self._run_sizes()

    async def _run_sizes(self) -> None:
        async with AdminClient(self.namesrv_addr) as admin:
            self._admin = admin
            try:
                for size in self.options.sizes:
                    await self._run_size(size)
            finally:
                self._admin = None

    async def _run_size(self, size: int) -> None:
        log.info("consumer bench: %d-byte bodies", size)
        self._drain_rates = {}
        takes = self.options.takes
        if any(takes(name) for name in DRAINS):
            topic = await self._create_topic(f"BenchDrain{size}")
            record_bytes = await self.produce_backlog(topic, size)
            if takes("push_drain"):
                for members in self.options.members:
                    await self.drain(topic, size, members, record_bytes)
            if takes("pull_drain"):
                await self.pull_drains(topic, size, record_bytes)
        if takes("e2e_latency"):
            await self.latency(size)
        if takes("loopback_echo"):
            await self.echo_floor(size)
        if takes("rebalance_join"):
            await self.rebalance(size)

    # -- helpers --------------------------------------------------------------------------------------

    @property
    def admin(self) -> AdminClient:
        """The admin client of the running cluster (only inside ``run``)."""
        if self._admin is None:
            raise BenchError("the cluster is not running")
        return self._admin

    async def _create_topic(self, name: str) -> str:
        """Create a topic with 8 read and write queues on every master of the cluster; wait until the
        NameServer routes all 8. Returns its name (``name`` plus the run's suffix)."""
        topic = name + self._suffix
        try:
            await create_topic(self.admin, topic, QUEUES, cluster=self.options.cluster)
        except Exception as error:
            raise BenchError(
                f"could not create topic {topic} on cluster {self.options.cluster} through the admin client"
                f" ({error}); the bench needs a cluster that accepts UPDATE_AND_CREATE_TOPIC"
            ) from error
        return topic

    async def _store_stats(self) -> list[dict[str, str]]:
        """Every master's runtime info (GET_BROKER_RUNTIME_INFO)."""
        addresses = (await self.admin.master_addresses(self.options.cluster)).values()
        return [await self.admin.broker_runtime_info(address) for address in addresses]

    async def _put_bytes(self) -> int:
        """Bytes stored in the masters' CommitLogs so far."""
        return sum(stored_bytes(stats) for stats in await self._store_stats())

    async def _wait_dispatched(self, timeout_s: float) -> None:
        """Wait until every broker indexed all it stored (pulls then see all of it); a broker that does
        not say is not waited for."""
        deadline = time.monotonic() + timeout_s
        while any(dispatch_behind(stats) for stats in await self._store_stats()):
            if time.monotonic() > deadline:
                raise BenchError(f"the brokers did not dispatch the backlog within {timeout_s:.0f} s")
            await asyncio.sleep(0.05)

    def _consumer(
        self, group: str, instance: str, listener: Listener, where: ConsumeFromWhere, topic: str
    ) -> PushConsumer:
        config = ConsumerConfig(
            group=group,
            client=ClientConfig(namesrv_addr=self.namesrv_addr, instance_name=instance),
            consume_from_where=where,
            pull_batch_size=self.options.pull_batch,
        )
        consumer = PushConsumer(config, listener)
        consumer.subscribe(topic)
        return consumer

    def _producer(self, group: str, instance: str = "DEFAULT") -> Producer:
        """A producer of ``group``; one with a consumer's ``instance`` shares that consumer's connections
        (``rocketq.client.client_links``), as an application's producer and consumer do by default."""
        client = ClientConfig(namesrv_addr=self.namesrv_addr, instance_name=instance)
        return Producer(ProducerConfig(group=group, client=client))

    def _report(
        self,
        name: str,
        size: int,
        messages: int,
        seconds: float,
        nbytes: float,
        *,
        batch: int = 1,
        latencies: list[int] | None = None,
        extra: Extra | None = None,
    ) -> None:
        """Build a measurement from raw counts (and per-message latencies in ns) and emit it."""
        self.emit(Measurement.from_counts(name, size, messages, seconds, nbytes, latencies, batch=batch, extra=extra))

    @staticmethod
    async def _wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> int:
        """Poll ``condition`` until true; returns the ``perf_counter_ns`` then."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise BenchError(f"timed out after {timeout_s:.0f} s waiting for {what}")
            await asyncio.sleep(POLL_S)
        return time.perf_counter_ns()

    async def _paced_send(self, producer: Producer, topic: str, size: int, count: int, *, stamp: bool) -> float:
        """Send ``count`` messages one at a time at ``rate`` per second; returns the seconds taken."""
        body = b"x" * size
        marked = stamp and STAMP_MARKS

        def send(now_ns: int) -> Awaitable[object]:
            if marked:
                mark_sent()
            properties = {SENT_PROPERTY: str(now_ns)} if stamp else {}
            return producer.send(Message(topic, body, properties=properties))

        return await paced(self.options.rate, count, send)

    # -- measurements ---------------------------------------------------------------------------------

    async def produce_backlog(self, topic: str, size: int) -> float:
        """Write the backlog with ``send_batch``; returns the stored record bytes per message."""
        total = self.options.backlog
        batch = max(1, min(PRODUCE_BATCH, PRODUCE_BATCH_BYTES // (size + 256)))
        body = b"x" * size
        bytes_before = await self._put_bytes()
        slots = asyncio.Semaphore(PRODUCE_IN_FLIGHT)
        async with self._producer(f"bench-backlog-{size}") as producer:

            async def send(count: int) -> None:
                async with slots:
                    await producer.send_batch([Message(topic, body) for _ in range(count)])

            began = time.perf_counter_ns()
            sends = [asyncio.create_task(send(min(batch, total - i))) for i in range(0, total, batch)]
            await asyncio.gather(*sends)
            sent = time.perf_counter_ns()
        await self._wait_dispatched(timeout_s=600)
        dispatched = time.perf_counter_ns()
        nbytes = await self._put_bytes() - bytes_before
        self._report(
            "backlog_produce",
            size,
            total,
            (sent - began) / 1e9,
            nbytes,
            batch=batch,
            extra={
                "via": "Producer.send_batch",
                "in_flight": PRODUCE_IN_FLIGHT,
                "dispatch_lag_s": (dispatched - sent) / 1e9,
            },
        )
        return nbytes / total

    async def drain(self, topic: str, size: int, members: int, record_bytes: float, group: str = "") -> None:
        """A new group of ``members`` consumers (named ``group``, or after the size and member count)
        reads the whole backlog from the first offset."""
        total = self.options.backlog
        recorder = Recorder(total)
        group = group or f"bench-drain-{size}-{members}{self._suffix}"
        listener = recorder.listener(self.options.listener, recorder.count)
        consumers = [
            self._consumer(group, f"{group}-{i}", listener, ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, topic)
            for i in range(members)
        ]
        before = Usage.now(self._broker_pid)
        began = time.perf_counter_ns()
        try:
            await asyncio.gather(*(consumer.start() for consumer in consumers))
            seen = recorder.seen
            last, last_progress = 0, time.monotonic()
            while not recorder.done_ns:
                await asyncio.sleep(0.002)
                if len(seen) != last:
                    last, last_progress = len(seen), time.monotonic()
                elif time.monotonic() - last_progress > STALL_TIMEOUT_S:
                    raise BenchError(f"drain stalled at {last:,} of {total:,} messages")
            used = Usage.now(self._broker_pid)
            with contextlib.suppress(BenchError):  # ``consumed`` counts a batch after its listener returned
                await self._wait_for(lambda: sum(c.consumed for c in consumers) >= total, 5.0, "the counters")
            delivered = sum(consumer.consumed for consumer in consumers)
            per_member = "/".join(str(consumer.consumed) for consumer in consumers)
        finally:
            await asyncio.gather(*(consumer.aclose() for consumer in consumers), return_exceptions=True)
        seconds = (recorder.done_ns - began) / 1e9
        rate = total / seconds
        self._drain_rates[members] = rate
        extra: Extra = {
            "members": members,
            "listener": self.options.listener,
            "duplicates": max(0, delivered - total),
            "per_member": per_member,
            **used.since(before, seconds, total),
        }
        if members != 1 and 1 in self._drain_rates:
            extra["vs_1_member"] = rate / self._drain_rates[1]
        batch = consumers[0].config.pull_batch_size
        self._report("push_drain", size, total, seconds, record_bytes * total, batch=batch, extra=extra)

    async def pull_drains(self, topic: str, size: int, record_bytes: float) -> None:
        """The backlog through ``poll()``: a new group's asyncio ``PullConsumer``, then a blocking one's."""
        total = self.options.backlog
        rates: dict[str, float] = {}
        for api in APIS:
            before = Usage.now(self._broker_pid)
            try:
                drained = await pull_drain(
                    api, self.namesrv_addr, topic, f"bench-pull-{api}-{size}{self._suffix}", total,
                    pull_batch=self.options.pull_batch, stall_s=STALL_TIMEOUT_S,
                )  # fmt: skip
            except DrainStalled as error:
                raise BenchError(str(error)) from error
            rates[api] = drained.messages / drained.seconds
            extra: Extra = {"api": api, **Usage.now(self._broker_pid).since(before, drained.seconds, drained.messages)}
            if api != "asyncio":
                extra["vs_asyncio"] = rates[api] / rates["asyncio"]
            batch = self.options.pull_batch
            nbytes = record_bytes * drained.messages
            self._report("pull_drain", size, drained.messages, drained.seconds, nbytes, batch=batch, extra=extra)

    async def latency(self, size: int) -> None:
        """End-to-end latency (send call to listener) of a paced stream through one member, the producer
        in the consumer's client instance (one connection to the broker, as an application's by default)."""
        topic = await self._create_topic(f"BenchLatency{size}")
        recorder = Recorder()
        group = f"bench-latency-{size}{self._suffix}"
        listener = recorder.listener(self.options.listener, recorder.stamp)
        consumer = self._consumer(group, group, listener, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, topic)
        count = max(1, round(self.options.rate * self.options.latency_seconds))
        async with consumer, self._producer(f"bench-latency-producer-{size}", group) as producer:
            await self._wait_for(lambda: _owned(consumer, topic) == QUEUES, REBALANCE_TIMEOUT_S, "the assignment")
            await self._paced_send(producer, topic, size, WARMUP_MESSAGES, stamp=False)
            await self._wait_for(lambda: len(recorder.seen) >= WARMUP_MESSAGES, STALL_TIMEOUT_S, "the warm-up")
            before = Usage.now(self._broker_pid)
            seconds = await self._paced_send(producer, topic, size, count, stamp=True)
            used = Usage.now(self._broker_pid)
            with contextlib.suppress(BenchError):
                await self._wait_for(lambda: len(recorder.latencies) >= count, 10.0, "the last messages")
        latencies = recorder.latencies
        received = len(latencies)
        if not received:
            raise BenchError("no message of the latency stream arrived")
        latencies.sort()
        extra: Extra = {
            "p999_us": percentile(latencies, 0.999) / 1000,
            "max_us": latencies[-1] / 1000,
            "rate": self.options.rate,
            "send_rate": count / seconds,
            "sent": count,
            "lost": count - received,
            **used.since(before, seconds, count),
            "listener": self.options.listener,
        }
        nbytes = received * recorder.record_size
        self._report("e2e_latency", size, received, seconds, nbytes, latencies=latencies, extra=extra)

    async def echo_floor(self, size: int) -> None:
        """The machine's floor for ``e2e_latency``: the same pacing, a trivial echo server, no rocketq."""
        count = max(1, round(self.options.rate * self.options.latency_seconds))
        began = time.perf_counter_ns()
        rtts = await measure_echo(self.options.rate, count)
        seconds = (time.perf_counter_ns() - began) / 1e9
        rtts.sort()
        extra: Extra = {
            "p999_us": percentile(rtts, 0.999) / 1000,
            "max_us": rtts[-1] / 1000,
            "rate": self.options.rate,
            "payload": len(PAYLOAD),
        }
        self._report("loopback_echo", size, count, seconds, count * len(PAYLOAD), latencies=rtts, extra=extra)

    async def rebalance(self, size: int) -> None:
        """A second member joins a group consuming a steady stream: time to a clean split and first message."""
        topic = await self._create_topic(f"BenchRebalance{size}")
        group = f"bench-rebalance-{size}{self._suffix}"
        old, new = Recorder(), Recorder()
        first = self._consumer(
            group,
            f"{group}-0",
            old.listener(self.options.listener, old.count),
            ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
            topic,
        )
        second = self._consumer(
            group,
            f"{group}-1",
            new.listener(self.options.listener, new.count),
            ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
            topic,
        )
        stream_count = self.options.rate * 3600  # stopped long before it ends
        async with first, self._producer(f"bench-rebalance-producer-{size}") as producer:
            await self._wait_for(lambda: _owned(first, topic) == QUEUES, REBALANCE_TIMEOUT_S, "the first assignment")
            stream = asyncio.create_task(self._paced_send(producer, topic, size, stream_count, stamp=False))
            try:
                steady = max(10, self.options.rate // 5)
                await self._wait_for(lambda: len(old.seen) >= steady, STALL_TIMEOUT_S, "the steady stream")
                consumed_before = len(old.seen)
                began = time.perf_counter_ns()
                starting = asyncio.create_task(second.start())
                try:
                    split = await self._wait_for(
                        lambda: _split(first, second, topic), REBALANCE_TIMEOUT_S, "disjoint assignments"
                    )
                    await starting
                    started = time.perf_counter_ns()
                    await self._wait_for(lambda: new.first_ns != 0, STALL_TIMEOUT_S, "the new member's first message")
                    ended = max(split, new.first_ns)
                    consumed = len(old.seen) - consumed_before + len(new.seen)
                    duplicates = len(old.seen & new.seen)
                    shares = f"{_owned(first, topic)}/{_owned(second, topic)}"
                finally:
                    await second.aclose()
            finally:
                await cancel_and_wait([stream])
        extra: Extra = {
            "assigned_ms": (split - began) / 1e6,
            "first_message_ms": (new.first_ns - began) / 1e6,
            "start_call_ms": (started - began) / 1e6,
            "queues": shares,
            "duplicates": duplicates,
            "rate": self.options.rate,
            "listener": self.options.listener,
        }
        nbytes = consumed * (new.record_size or old.record_size)
        self._report("rebalance_join", size, consumed, (ended - began) / 1e9, nbytes, extra=extra)


def _owned(consumer: PushConsumer, topic: str) -> int:
    return sum(1 for queue in consumer.assigned_queues if queue.topic == topic)


def _split(first: PushConsumer, second: PushConsumer, topic: str) -> bool:
    """Both members hold queues of ``topic``, none twice, all of them together."""
    mine = {queue for queue in first.assigned_queues if queue.topic == topic}
    theirs = {queue for queue in second.assigned_queues if queue.topic == topic}
    return bool(mine) and bool(theirs) and not (mine & theirs) and len(mine | theirs) == QUEUES


def run_consumer_bench(options: ConsumerBenchOptions, emit: Sink) -> None:
    """Run ``rocketq bench consumer`` with ``options``, handing every measurement to ``emit``."""
    run_loop(ConsumerBench(options, emit).run())
