"""SYNC_FLUSH writers for ``rocketq bench store``: concurrent puts that each wait for their fsync.

Two ways to be concurrent, both measured:

- ``loop``: coroutines on one event loop (uvloop when installed), each putting one message at a time
  the way the broker does for a producer that waits for the fsync (``GroupedPuts``): the puts of one
  loop iteration are appended together, dispatched in one pass (``LoopDispatch``) and wait for one
  group commit (``FlushWaits``).
- ``threads``: plain threads calling ``put_message_and_wait`` (an embedded store without a loop).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence

from rocketq.broker.grouped_puts import GroupedPuts
from rocketq.broker.loop_dispatch import FlushWaits, LoopDispatch
from rocketq.store.message_store import MessageStore
from rocketq.store.results import MessageToStore, PutStatus

WRITER_KINDS = ("loop", "threads")

SyncWriters = Callable[[MessageStore, Sequence[MessageToStore], int], tuple[float, list[int]]]
"""(store, messages, writers) -> (seconds, per-put latencies in ns); raises RuntimeError on a failed put."""


def loop_writers(store: MessageStore, messages: Sequence[MessageToStore], writers: int) -> tuple[float, list[int]]:
    """``writers`` coroutines on one event loop share ``messages`` round robin."""
    per_writer: list[list[int]] = [[] for _ in range(writers)]
    failures: list[str] = []

    async def writer(index: int, puts: GroupedPuts) -> None:
        latencies = per_writer[index]
        clock = time.perf_counter_ns
        put_and_wait = puts.put_and_wait
        ok = PutStatus.PUT_OK
        for message in messages[index::writers]:
            t = clock()
            result = await put_and_wait((message,))
            if result.status is not ok:
                failures.append(result.status.value)
            latencies.append(clock() - t)

    async def run_all() -> float:
        dispatch = LoopDispatch(store, asyncio.get_running_loop())
        puts = GroupedPuts(store, dispatch, FlushWaits(store))
        began = time.perf_counter_ns()
        await asyncio.gather(*(writer(index, puts) for index in range(writers)))
        return (time.perf_counter_ns() - began) / 1e9

    try:
        import uvloop

        seconds = uvloop.run(run_all())
    except ImportError:
        seconds = asyncio.run(run_all())
    _raise_on(failures)
    return seconds, [value for latencies in per_writer for value in latencies]


def thread_writers(store: MessageStore, messages: Sequence[MessageToStore], writers: int) -> tuple[float, list[int]]:
    """``writers`` threads share ``messages`` round robin, each blocking in ``put_message_and_wait``."""
    barrier = threading.Barrier(writers + 1)
    per_thread: list[list[int]] = [[] for _ in range(writers)]
    failures: list[str] = []

    def writer(index: int) -> None:
        latencies = per_thread[index]
        clock = time.perf_counter_ns
        put = store.put_message_and_wait
        ok = PutStatus.PUT_OK
        barrier.wait()
        for message in messages[index::writers]:
            t = clock()
            status = put(message).status
            latencies.append(clock() - t)
            if status is not ok:
                failures.append(status.value)

    threads = [threading.Thread(target=writer, args=(i,), name=f"bench-writer-{i}") for i in range(writers)]
    for thread in threads:
        thread.start()
    barrier.wait()
    began = time.perf_counter_ns()
    for thread in threads:
        thread.join()
    seconds = (time.perf_counter_ns() - began) / 1e9
    _raise_on(failures)
    return seconds, [value for latencies in per_thread for value in latencies]


def _raise_on(failures: list[str]) -> None:
    if failures:
        raise RuntimeError(f"{len(failures)} sync puts failed, first: {failures[0]}")


SYNC_WRITERS: dict[str, SyncWriters] = {"loop": loop_writers, "threads": thread_writers}
