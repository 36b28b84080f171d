"""What the benchmarks share around a cluster: running a coroutine on uvloop, a topic created and
routed before the clock starts, a broker's store progress read from its runtime info, and the bench
and its brokers kept on CPUs of their own."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Coroutine, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from rocketq.client.admin import AdminClient
from rocketq.testing.cluster_process import ClusterProcess

T = TypeVar("T")

QUEUES = 8
CLUSTER_NAME = "DefaultCluster"
ROUTE_TIMEOUT_S = 10.0
CLUSTER_SETTINGS: dict[str, Any] = {
    "mapped_file_size_commit_log": 256 * 1024 * 1024,
    "mapped_file_size_consume_queue": 300_000 * 20,
    "max_hash_slot_num": 500_000,
    "max_index_num": 2_000_000,
}
"""The benchmarks' broker (``BrokerConfig`` fields): CommitLog files of 256 MiB, ConsumeQueue files of
300,000 entries and an index sized for a few million keys, so runs neither roll files nor fill the
index every few seconds."""


def run_loop(main: Coroutine[Any, Any, T]) -> T:
    """``main`` run to its end on a new uvloop event loop (asyncio's own where uvloop is not installed:
    a client-only install)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


async def create_topic(admin: AdminClient, topic: str, queues: int = QUEUES, *, cluster: str = CLUSTER_NAME) -> None:
    """Create ``topic`` with ``queues`` read and write queues on every master of ``cluster``, and return
    once the NameServer routes all of them (sends right after would otherwise see an older route).

    Raises:
        TimeoutError: the route did not show them within ``ROUTE_TIMEOUT_S``.
    """
    await admin.update_topic(topic, cluster=cluster, read_queues=queues, write_queues=queues)
    deadline = time.monotonic() + ROUTE_TIMEOUT_S
    while True:
        route = await admin.topic_route(topic)
        if route.queue_datas and all(data.write_queue_nums == queues for data in route.queue_datas):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the route of {topic} never showed {queues} queues")
        await asyncio.sleep(0.05)


def stored_bytes(stats: dict[str, str]) -> int:
    """The CommitLog's end offset from a broker's runtime info: RocketMQ's key, else rocketq's older one."""
    return int(stats.get("commitLogMaxOffset", stats.get("commit_log_max_offset", "0")))


def dispatch_behind(stats: dict[str, str]) -> int:
    """Stored bytes the broker has not indexed yet (0 when its runtime info does not say)."""
    if "dispatchBehindBytes" in stats:
        return int(stats["dispatchBehindBytes"])
    if "dispatched_offset" in stats:
        return max(0, stored_bytes(stats) - int(stats["dispatched_offset"]))
    return 0


def start_order_halves(rounds: int) -> list[tuple[bool, range]]:
    """A side-by-side bench's rounds in two halves, each with its own pair of brokers: in the first the
    broker with the feature on is started second, in the second it is started first, as ``(feature_first,
    round numbers)``; an empty half is left out. On this host the broker started second of two ran
    measurably slower (5-15 % of CPU per message in ``rocketq bench metrics``, the sign following the start
    order when it was swapped), so a single order would charge that to the feature or credit it."""
    first = (rounds + 1) // 2
    halves = [(False, range(1, first + 1)), (True, range(first + 1, rounds + 1))]
    return [(feature_first, numbers) for feature_first, numbers in halves if numbers]


@contextlib.contextmanager
def started_pair(
    root: Path, feature: Mapping[str, Any], feature_first: bool, tag: int
) -> Iterator[tuple[ClusterProcess, ClusterProcess, bool]]:
    """Two clusters in child processes (``CLUSTER_SETTINGS``), one without and one with the broker
    settings ``feature``, started in the order ``feature_first`` says, under ``root`` (their folders named
    with ``tag``), and pinned ``cores_apart`` from the bench: ``(without, with, pinned)``."""
    with contextlib.ExitStack() as stack:
        started: dict[bool, ClusterProcess] = {}
        for on in (True, False) if feature_first else (False, True):
            settings = feature if on else {}
            cluster = ClusterProcess(root / f"{'on' if on else 'off'}-{tag}", **CLUSTER_SETTINGS, **settings)
            started[on] = stack.enter_context(cluster)
        without, with_feature = started[False], started[True]
        pinned = stack.enter_context(cores_apart([without.pid, with_feature.pid]))
        yield without, with_feature, pinned


@contextlib.contextmanager
def cores_apart(broker_pids: Sequence[int]) -> Iterator[bool]:
    """Run this process on the first CPU it may use and the brokers ``broker_pids`` on the others, until
    the block ends (this process's threads get their CPUs back then; the brokers keep theirs).

    A bench comparing two brokers side by side (with a feature on and off) is then fair to both: left
    to the scheduler, one pair of processes may share a CPU while the other pair runs on two, and on a
    2-core host that alone moved the send rate of two identical brokers by 0-33 % from one run to the
    next. Yields False (and pins nothing) with fewer than 2 CPUs or where Linux's affinity calls are
    missing.
    """
    if not hasattr(os, "sched_setaffinity"):
        yield False
        return
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        yield False
        return
    own = {thread: os.sched_getaffinity(thread) for thread in _threads(os.getpid())}
    try:
        for thread in own:
            _set_affinity(thread, {allowed[0]})
        for pid in broker_pids:
            for thread in _threads(pid):
                _set_affinity(thread, set(allowed[1:]))
        yield True
    finally:
        for thread, cpus in own.items():
            _set_affinity(thread, cpus)


def _threads(pid: int) -> list[int]:
    try:
        return [int(name) for name in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return [pid]


def _set_affinity(thread: int, cpus: set[int]) -> None:
    with contextlib.suppress(OSError):  # a thread that ended meanwhile
        os.sched_setaffinity(thread, cpus)
