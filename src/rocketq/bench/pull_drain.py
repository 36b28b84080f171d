"""``pull_drain`` of ``rocketq bench consumer``: a backlog read through ``poll()``, by the asyncio
``PullConsumer`` and by its blocking facade ``SyncPullConsumer``, one after the other in the same run.

Each drain is a new group subscribed with CONSUME_FROM_FIRST_OFFSET; the clock runs from ``start()``
until ``poll()`` has returned ``total`` messages. The blocking one polls from a worker thread (as a
program would from its main thread) while its consumer runs on its own loop thread.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from rocketq.client import ClientConfig, ConsumeFromWhere, ConsumerConfig, PullConsumer, SyncPullConsumer

POLL_TIMEOUT_S = 1.0
APIS = ("asyncio", "sync")


class DrainStalled(RuntimeError):
    """``poll()`` returned nothing for longer than the stall timeout before the backlog was read."""


@dataclass(frozen=True, slots=True)
class Drained:
    messages: int
    seconds: float


def _config(namesrv_addr: str, group: str, pull_batch: int) -> ConsumerConfig:
    return ConsumerConfig(
        group=group,
        client=ClientConfig(namesrv_addr=namesrv_addr, instance_name=group),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        pull_batch_size=pull_batch,
    )


def _stalled(got: int, total: int, since: float, stall_s: float) -> None:
    if time.monotonic() - since > stall_s:
        raise DrainStalled(f"pull drain stalled at {got:,} of {total:,} messages")


async def drain_asyncio(config: ConsumerConfig, topic: str, total: int, stall_s: float) -> Drained:
    consumer = PullConsumer(config)
    consumer.subscribe(topic)
    began = time.perf_counter()
    try:
        await consumer.start()
        got, progress = 0, time.monotonic()
        while got < total:
            batch = await consumer.poll(POLL_TIMEOUT_S)
            if batch:
                got, progress = got + len(batch), time.monotonic()
            else:
                _stalled(got, total, progress, stall_s)
        seconds = time.perf_counter() - began
    finally:
        await consumer.aclose()
    return Drained(got, seconds)


def drain_blocking(config: ConsumerConfig, topic: str, total: int, stall_s: float) -> Drained:
    consumer = SyncPullConsumer(config)
    try:
        consumer.subscribe(topic)
        began = time.perf_counter()
        consumer.start()
        got, progress = 0, time.monotonic()
        while got < total:
            batch = consumer.poll(POLL_TIMEOUT_S)
            if batch:
                got, progress = got + len(batch), time.monotonic()
            else:
                _stalled(got, total, progress, stall_s)
        seconds = time.perf_counter() - began
    finally:
        consumer.close()
    return Drained(got, seconds)


async def drain(
    api: str, namesrv_addr: str, topic: str, group: str, total: int, *, pull_batch: int, stall_s: float
) -> Drained:
    """Read ``total`` messages of ``topic`` from its first offset with a new group through ``api``'s
    pull consumer (``"asyncio"`` or ``"sync"``).

    Raises:
        DrainStalled: no message for ``stall_s`` seconds before the last one.
    """
    config = _config(namesrv_addr, group, pull_batch)
    if api == "asyncio":
        return await drain_asyncio(config, topic, total, stall_s)
    return await asyncio.to_thread(drain_blocking, config, topic, total, stall_s)
