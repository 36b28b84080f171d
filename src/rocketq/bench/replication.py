"""``rocketq bench replication``: what replication costs a producer, and how fast a slave follows.

For each body size, three runs of ``rocketq bench producer``'s asyncio workers (``in_flight`` sends at
once, ``duration_s``) against a broker in a child process: a lone ASYNC_MASTER, an ASYNC_MASTER with a
slave and a SYNC_MASTER with a slave (each slave in a child process of its own). While the sends run,
the slave's lag behind its master is sampled (messages: the sum over the topic's queues of the master's
max offset minus the slave's). After the lone run a slave is started against that master and timed as
it copies the whole log, filled to ``catch_up_mb`` first (replication throughput, MB/s of CommitLog, and
each process's CPU time per MB). ``transfer_batch_sizes`` adds catch-ups alone from masters with those
frame sizes (``haTransferBatchSize``), to compare them in one run.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from rocketq.bench import MB, Measurement, Sink, scratch_directory
from rocketq.bench.failover import NOTES as FAILOVER_NOTES
from rocketq.bench.failover import run_failover_bench
from rocketq.bench.producer import Calls, ProducerBenchOptions, calls_measurement, run_async_workers
from rocketq.bench.running import CLUSTER_SETTINGS, QUEUES, create_topic, run_loop
from rocketq.bench.usage import thread_totals
from rocketq.broker.config import BrokerConfig
from rocketq.client import ClientConfig, Message, Producer, ProducerConfig
from rocketq.client.admin import AdminClient
from rocketq.common.message_id import parse_offset_message_id
from rocketq.protocol import ResponseCode, make_request
from rocketq.protocol.headers import GetMaxOffsetRequestHeader, GetMaxOffsetResponseHeader
from rocketq.remoting import RemotingClient
from rocketq.remoting.connection import next_opaque
from rocketq.testing.cluster_process import ClusterProcess

TOPIC = "BenchReplication"
LAG_SAMPLE_S = 0.1
CATCH_UP_TIMEOUT_S = 60.0
SETUPS = ("lone", "ASYNC_MASTER", "SYNC_MASTER")


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicationBenchOptions:
    sizes: tuple[int, ...] = (100, 1024)
    in_flight: int = 64
    duration_s: float = 5.0
    catch_up_mb: int = 64  # the lone master's log is filled to this size before a new slave copies it
    transfer_batch_sizes: tuple[int, ...] = ()  # catch-ups only, from masters with these haTransferBatchSize
    sends: bool = True  # the send runs (and the lone master's catch-up after them)
    failover_rounds: int = 3  # masters killed with failover on (rocketq.bench.failover); 0: none
    directory: Path | None = None


async def queued(client: RemotingClient, address: str) -> int:
    """Messages in the bench topic's queues on the broker at ``address`` (the sum of their max offsets)."""
    total = 0
    for queue_id in range(QUEUES):
        header = GetMaxOffsetRequestHeader(topic=TOPIC, queue_id=queue_id)
        request = make_request(header.CODE, opaque=next_opaque(), ext_fields=header.to_ext_fields())
        response = await client.invoke(address, request, 5)
        if response.code == ResponseCode.SUCCESS:
            total += GetMaxOffsetResponseHeader.from_ext_fields(response.ext_fields or {}).offset
    return total


async def _sampled_lag(client: RemotingClient, master: str, slave: str, stop: asyncio.Event) -> list[int]:
    lags = []
    while not stop.is_set():
        master_count = await queued(client, master)
        lags.append(max(0, master_count - await queued(client, slave)))
        await asyncio.sleep(LAG_SAMPLE_S)
    return lags


async def _caught_up(client: RemotingClient, master: str, slave: str) -> float:
    """Seconds until the slave holds every message the master holds."""
    began = time.perf_counter()
    target = await queued(client, master)
    while (copied := await queued(client, slave)) < target:
        if time.perf_counter() - began > CATCH_UP_TIMEOUT_S:
            raise TimeoutError(f"the slave copied {copied} of {target} messages in {CATCH_UP_TIMEOUT_S:.0f} s")
        await asyncio.sleep(0.01)
    return time.perf_counter() - began


async def _run(options: ReplicationBenchOptions, size: int, setup: str, root: Path, emit: Sink) -> None:
    role = "ASYNC_MASTER" if setup == "lone" else setup
    with ClusterProcess(root / "master", broker_role=role, **CLUSTER_SETTINGS) as master:
        slave: ClusterProcess | None = None
        if setup != "lone":
            slave = _slave(root, master).start()
        client = RemotingClient()
        try:
            async with AdminClient(master.namesrv_addr) as admin:
                await create_topic(admin, TOPIC)
            config = ProducerConfig(group="bench-replication", client=ClientConfig(namesrv_addr=master.namesrv_addr))
            async with Producer(config) as producer:
                probe = Message(TOPIC, b"probe")
                while (await producer.send(probe)).status.value != "SEND_OK":  # (a SYNC_MASTER's slave connects)
                    await asyncio.sleep(0.05)
                bench = ProducerBenchOptions(topic=TOPIC, size=size, in_flight=options.in_flight)
                await run_async_workers(producer, bench, 1.0, Calls(options.in_flight))  # warm-up
                calls, stop = Calls(options.in_flight), asyncio.Event()
                sampler = None
                if slave is not None:
                    sampler = asyncio.create_task(_sampled_lag(client, master.broker_addr, slave.broker_addr, stop))
                began = time.perf_counter()
                await run_async_workers(producer, bench, options.duration_s, calls)
                seconds = time.perf_counter() - began
                stop.set()
                measurement = calls_measurement(f"replication_{setup.lower()}", bench, calls.all(), seconds)
                if sampler is not None and slave is not None:
                    lags = await sampler
                    measurement.extra["lag_max_msgs"] = max(lags, default=0)
                    measurement.extra["lag_mean_msgs"] = round(sum(lags) / max(1, len(lags)))
                    measurement.extra["drain_s"] = round(
                        await _caught_up(client, master.broker_addr, slave.broker_addr), 3
                    )
                emit(measurement)
                if slave is None:  # copy the whole log to a new slave: the replication throughput
                    await _fill(producer, options.catch_up_mb * MB)
                    measurement = await _catch_up(client, root, master, producer, size)
                    measurement.extra["transfer_batch_size"] = BrokerConfig().ha_transfer_batch_size
                    emit(measurement)
        finally:
            await client.aclose()
            if slave is not None:
                slave.stop()


async def _fill(producer: Producer, log_bytes: int) -> None:
    """Send batches of 64 messages of 4 KiB until the master's CommitLog holds ``log_bytes``."""
    batch = [Message(TOPIC, b"f" * 4096) for _ in range(64)]
    end = 0

    async def worker() -> None:
        nonlocal end
        while end < log_bytes:
            result = await producer.send_batch(batch)
            end = max(end, parse_offset_message_id(result.offset_msg_id.split(",")[-1])[2])

    await asyncio.gather(*(worker() for _ in range(8)))


async def _catch_up(
    client: RemotingClient, root: Path, master: ClusterProcess, producer: Producer, size: int
) -> Measurement:
    """A new slave copying ``master``'s log: timed from its process start (``with_start_s``), and from
    the first look at its progress once it serves (the MB/s, of the CommitLog bytes copied since)."""
    end = parse_offset_message_id((await producer.send(Message(TOPIC, b"probe"))).offset_msg_id)[2]
    target = await queued(client, master.broker_addr)
    began = time.perf_counter()
    slave = _slave(root, master).start()
    try:
        first_look, first = time.perf_counter(), await queued(client, slave.broker_addr)
        master_ns, slave_ns = thread_totals(master.pid)[0], thread_totals(slave.pid)[0]
        await _caught_up(client, master.broker_addr, slave.broker_addr)
        done = time.perf_counter()
        master_ns, slave_ns = thread_totals(master.pid)[0] - master_ns, thread_totals(slave.pid)[0] - slave_ns
    finally:
        slave.stop()
    copied_bytes = end * (target - first) / max(1, target)
    measurement = Measurement.from_counts("replication_catch_up", size, target - first, done - first_look, copied_bytes)
    copied_mb = max(copied_bytes, 1) / 1e6
    measurement.extra.update(
        {
            "log_mb": round(end / 1e6, 1),
            "with_start_s": round(done - began, 3),
            "copied_before_look": first,
            "master_cpu_ms_per_mb": round(master_ns / 1e6 / copied_mb, 2),  # its live threads' CPU time
            "slave_cpu_ms_per_mb": round(slave_ns / 1e6 / copied_mb, 2),
        }
    )
    return measurement


def _slave(root: Path, master: ClusterProcess) -> ClusterProcess:
    return ClusterProcess(
        root / "slave", broker_role="SLAVE", broker_id=1, ha_master_address=master.ha_address, **CLUSTER_SETTINGS
    )


async def _catch_up_run(options: ReplicationBenchOptions, transfer_batch_size: int, root: Path, emit: Sink) -> None:
    """A master with ``transfer_batch_size`` filled to ``catch_up_mb``, then a new slave timed copying it."""
    with ClusterProcess(root / "master", ha_transfer_batch_size=transfer_batch_size, **CLUSTER_SETTINGS) as master:
        client = RemotingClient()
        try:
            async with AdminClient(master.namesrv_addr) as admin:
                await create_topic(admin, TOPIC)
            config = ProducerConfig(group="bench-replication", client=ClientConfig(namesrv_addr=master.namesrv_addr))
            async with Producer(config) as producer:
                await _fill(producer, options.catch_up_mb * MB)
                measurement = await _catch_up(client, root, master, producer, 4096)
                measurement.extra["transfer_batch_size"] = transfer_batch_size
                emit(measurement)
        finally:
            await client.aclose()


def run_replication_bench(options: ReplicationBenchOptions, emit: Sink) -> None:
    """Run ``rocketq bench replication``, handing every measurement to ``emit``."""
    for size in options.sizes if options.sends else ():
        for setup in SETUPS:
            with scratch_directory(options.directory, "replication") as root:
                run_loop(_run(options, size, setup, root, emit))
    for transfer_batch_size in options.transfer_batch_sizes:
        with scratch_directory(options.directory, "replication") as root:
            run_loop(_catch_up_run(options, transfer_batch_size, root, emit))
    if options.failover_rounds:
        with scratch_directory(options.directory, "failover") as root:
            if not run_failover_bench(root, options.failover_rounds, emit):
                print("failover: not measured, etcd is not installed (Debian package etcd-server)")


NOTES = (
    "replication_lone / _async_master / _sync_master: sends (64 in flight) to a lone master, to an ASYNC_MASTER",
    "with a slave and to a SYNC_MASTER with a slave; lag_max/mean_msgs: the slave's lag sampled every 0.1 s,",
    "drain_s: how long it took to catch up after the sends. replication_catch_up: a new slave copying the lone",
    "master's whole CommitLog (mb_per_s of CommitLog bytes; master_/slave_cpu_ms_per_mb: each process's CPU",
    "time per MB copied, from the first look at the slave's progress).",
    *FAILOVER_NOTES,
)
