"""``rocketq bench query``: message query latency on a large store, through a real broker.

A store of ``messages`` messages (100-byte bodies, 8 queues of one topic, each message with a unique
KEYS entry and a unique UNIQ_KEY: two index entries each) is written straight through the store's
batch append path (``put_batch`` of SEND_BATCH_MESSAGE bodies, as ``rocketq bench store`` does), then
served by a NameServer and a broker, by default in a child process (``ClusterProcess``, its own core)
or with ``--broker inline`` in the bench's event loop. The store uses RocketMQ's file sizes (1 GiB
CommitLog files; IndexFiles of 5,000,000 slots and 20,000,000 entries), scaled down for small runs.

- ``query_store_build``: writing the store and indexing it (``messages`` messages; the dispatch that
  builds the ConsumeQueues and IndexFiles is included). The bench then waits for ``os.sync()``, so the
  write-back of the new files does not overlap the queries.

For each of ``warmup + queries`` random messages, in turn (all kinds see the same moments of this busy
machine; the first ``warmup`` rounds are not counted):

- ``query_by_key``: ``AdminClient.query_by_key`` of the message's key, as a user calls it (the topic's
  route, cached for 30 s; QUERY_MESSAGE to the broker: the index lookup and the record read; decoding
  and the client's checks). It must return exactly that message.
- ``query_by_unique_key``: the same by its UNIQ_KEY (``_UNIQUE_KEY_QUERY``).
- ``view_by_offset_id``: ``AdminClient.view_message`` of its offset id (VIEW_MESSAGE_BY_ID: no index,
  one record read: the floor under the two above).
- ``loopback_echo``: the machine's floor: a 64-byte round trip to a trivial echo server in a child
  process (``rocketq.bench.echo``), no rocketq code on the path. Each query row's ``vs_echo_p99`` is
  its p99 over this one's: this host's latencies swing with its load, the ratio much less.

Latencies are per call in µs: ``p50_us``/``p99_us`` columns, ``p999_us`` in the notes, with the target
(``p99`` under 5 ms for ``query_by_key``); ``seconds`` is the time spent in that kind's calls. The
store's files are in the page cache after the build (about 330 bytes of RAM per message keep them
there); a colder store pays the disk's random reads on top.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocketq.bench import Extra, Measurement, Sink, latency_us, percentile, scratch_directory
from rocketq.bench.echo import PAYLOAD, echo_connection
from rocketq.bench.running import run_loop
from rocketq.bench.store import frozen_gc
from rocketq.bench.store_workload import QUEUES, TOPIC, build_messages, build_wire_batches
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageExt
from rocketq.common.message_id import encode_host, offset_message_id
from rocketq.store import compiled_append
from rocketq.store.message_store import MessageStore
from rocketq.store.results import PutStatus
from rocketq.testing.cluster import LocalCluster
from rocketq.testing.cluster_process import ClusterProcess

log = logging.getLogger(__name__)

BODY_SIZE = 100
BUILD_CHUNK = 500_000  # messages built and appended at a time (bounds the bench's memory)
BUILD_BATCH = 256  # messages per appended batch
TARGET_P99_MS = 5.0
CLUSTER_NAME = "DefaultCluster"

NOTES = (
    "The store is written directly (batch appends), then served by a NameServer and a broker;",
    "queries go one at a time through AdminClient (route lookup + QUERY_MESSAGE or VIEW_MESSAGE_BY_ID).",
    f"Latency columns are per query in µs; p999_us in the notes; target p99 under {TARGET_P99_MS:g} ms.",
)


class BenchError(RuntimeError):
    """A query benchmark step failed (a put was refused, a query found the wrong messages)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryBenchOptions:
    """What ``rocketq bench query`` measures.

    Attributes:
        messages: Messages in the store.
        queries: Timed queries of each kind (after ``warmup`` untimed ones).
        warmup: Untimed queries of each kind first.
        broker: ``"process"`` (NameServer and broker in a child process) or ``"inline"``.
        directory: Parent of the scratch directory (removed afterwards); None for the system temp dir.
    """

    messages: int = 10_000_000
    queries: int = 10_000
    warmup: int = 500
    broker: str = "process"
    directory: Path | None = None


def broker_overrides(messages: int) -> dict[str, Any]:
    """The broker's file sizes: RocketMQ's for big stores, smaller ones for small runs (files are
    allocated in full when created)."""
    return {
        "mapped_file_size_commit_log": 1 << 30 if messages >= 1_000_000 else 64 << 20,
        "mapped_file_size_consume_queue": 300_000 * 20,
        "max_hash_slot_num": min(5_000_000, max(1000, messages)),
        "max_index_num": min(20_000_000, max(4000, 4 * messages)),
    }


class QueryBench:
    """Runs every measurement of ``rocketq bench query`` and hands each to ``emit``."""

    def __init__(self, options: QueryBenchOptions, emit: Sink) -> None:
        self.options = options
        self.emit = emit
        self.prefix = os.urandom(8).hex().upper()  # of the UNIQ_KEYs: the message i has prefix + i as 16 hex

    async def run(self) -> None:
        with scratch_directory(self.options.directory, "query") as root:
            overrides = broker_overrides(self.options.messages)
            store_config = LocalCluster(root, **overrides).broker_config(0).store_config()
            await asyncio.to_thread(self.build, MessageStore(store_config))
            await asyncio.to_thread(os.sync)  # the new files written back before the clock runs
            if self.options.broker == "process":
                with ClusterProcess(root, **overrides) as child:
                    await self.measure(child.namesrv_addr)
            else:
                async with LocalCluster(root, **overrides) as cluster:
                    await self.measure(cluster.namesrv_addr)

    # -- the store ------------------------------------------------------------------------------------

    def build(self, store: MessageStore) -> None:
        """Append every message in batches and wait until the store has indexed them; then close it."""
        total = self.options.messages
        wire = compiled_append.load() is not None
        began = time.perf_counter()
        with store:
            for start in range(0, total, BUILD_CHUNK):
                count = min(BUILD_CHUNK, total - start)
                messages = build_messages(BODY_SIZE, count, start, self.prefix)
                with frozen_gc():
                    if wire:
                        for batch in build_wire_batches(messages, BUILD_BATCH):
                            measured = store.measure_batch(batch)
                            if measured is None:
                                raise BenchError("a bench batch was not accepted by the compiled append")
                            _check(store.put_batch(measured).status)
                    else:
                        for at in range(0, count, BUILD_BATCH):
                            _check(store.put_messages(messages[at : at + BUILD_BATCH]).status)
                del messages
                log.info("bench query: %d of %d messages stored", start + count, total)
            while store.dispatcher.dispatched_offset < store.commit_log.max_offset:
                time.sleep(0.01)
            seconds = time.perf_counter() - began
            written = store.stats().put_bytes
        extra: Extra = {"bytes": written, "append": "wire batches" if wire else "put_messages"}
        self.emit(Measurement.from_counts("query_store_build", BODY_SIZE, total, seconds, written, extra=extra))

    # -- the queries ----------------------------------------------------------------------------------

    async def measure(self, namesrv_addr: str) -> None:
        """Every kind of query for each random message in turn, with an echo round trip beside them, so
        all four see the same moments of this machine; then one measurement per kind."""
        kinds = ("query_by_key", "query_by_unique_key", "view_by_offset_id", "loopback_echo")
        latencies: dict[str, list[int]] = {kind: [] for kind in kinds}
        rng = random.Random(7)
        picks = [rng.randrange(self.options.messages) for _ in range(self.options.warmup + self.options.queries)]
        async with AdminClient(namesrv_addr) as admin, echo_connection() as echo:
            (address,) = await admin.update_topic(TOPIC, cluster=CLUSTER_NAME, read_queues=QUEUES, write_queues=QUEUES)
            # the store was written before the broker had an address: its records' store host is empty, so
            # offset ids are made from the broker's address and each message's CommitLog offset
            host, _, port = address.rpartition(":")
            broker_host = encode_host(host, int(port))
            clock = time.perf_counter_ns
            for number, i in enumerate(picks):
                key, unique_key = f"k{i}", f"{self.prefix}{i:016X}"
                t0 = clock()
                by_key = await admin.query_by_key(TOPIC, key)
                t1 = clock()
                by_unique_key = await admin.query_by_unique_key(TOPIC, unique_key)
                t2 = clock()
                _expect(by_key, key, len(by_key) == 1 and key in by_key[0].keys)
                _expect(by_unique_key, unique_key, len(by_unique_key) == 1 and by_unique_key[0].msg_id == unique_key)
                offset_id = offset_message_id(broker_host, by_key[0].commit_log_offset)
                t3 = clock()
                viewed = await admin.view_message(offset_id)
                t4 = clock()
                await echo()
                t5 = clock()
                if viewed.commit_log_offset != by_key[0].commit_log_offset:
                    raise BenchError(f"view_message({offset_id}) returned the message at {viewed.commit_log_offset}")
                if number >= self.options.warmup:
                    for kind, took in zip(kinds, (t1 - t0, t2 - t1, t4 - t3, t5 - t4), strict=True):
                        latencies[kind].append(took)
        echo_p99_us = latency_us(sorted(latencies["loopback_echo"]))[1] or 0.0
        for kind in kinds:
            self._report(kind, latencies[kind], echo_p99_us, TARGET_P99_MS if kind == "query_by_key" else None)

    def _report(self, name: str, latencies: list[int], echo_p99_us: float, target_ms: float | None) -> None:
        latencies.sort()
        p99 = latency_us(list(latencies))[1] or 0.0
        extra: Extra = {"p999_us": round(percentile(latencies, 0.999) / 1000, 2)}  # (rounded as p50 and p99)
        if name != "loopback_echo":
            extra["store_messages"] = self.options.messages
            extra["vs_echo_p99"] = p99 / echo_p99_us if echo_p99_us else None
        if target_ms is not None:
            extra["target_p99_ms"] = target_ms
            extra["meets_target"] = "yes" if p99 < target_ms * 1000 else "no"
        size = len(PAYLOAD) if name == "loopback_echo" else BODY_SIZE
        seconds = sum(latencies) / 1e9  # the time spent in these calls (the kinds take turns)
        self.emit(Measurement.from_counts(name, size, len(latencies), seconds, 0, latencies, extra=extra))


def _check(status: PutStatus) -> None:
    if status is not PutStatus.PUT_OK:
        raise BenchError(f"put failed: {status.value}")


def _expect(messages: list[MessageExt], key: str, right: bool) -> None:
    if not right:
        raise BenchError(f"a query of {key!r} found {len(messages)} messages, not exactly the one with that key")


def run_query_bench(options: QueryBenchOptions, emit: Sink) -> None:
    """Run ``rocketq bench query`` with ``options``, handing every measurement to ``emit``."""
    run_loop(QueryBench(options, emit).run())
