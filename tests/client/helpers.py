"""What the client tests share: the topic of the ``cluster`` fixture (conftest.py), consumer settings
for fast tests, a registry that closes consumers a failed test left open, and small waiting helpers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from rocketq.broker.schedule import ScheduleService
from rocketq.client import ClientConfig, ConsumeFromWhere, ConsumerConfig, Message, Producer, PullConsumer, PushConsumer
from rocketq.client.message import MessageExt
from rocketq.testing import FakeClock, LocalCluster

TOPIC = "Orders"
"""Created by the ``cluster`` fixture with four queues on each of its two brokers."""

_open: list[PushConsumer | PullConsumer] = []

Consumer = TypeVar("Consumer", PushConsumer, PullConsumer)


def opened(consumer: Consumer) -> Consumer:
    """``consumer``, closed by ``close_opened`` (the fixtures' teardown) if the test does not close it."""
    _open.append(consumer)
    return consumer


async def close_opened() -> None:
    while _open:
        await asyncio.wait_for(_open.pop().aclose(), 30)


class Cluster(Protocol):
    """A LocalCluster, or a ClusterProcess (cluster in a child process): all the config needs."""

    @property
    def namesrv_addr(self) -> str: ...


def consumer_config(cluster: Cluster, group: str = "G", **overrides: object) -> ConsumerConfig:
    settings: dict[str, object] = {
        "group": group,
        "client": ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name=f"c{time.monotonic_ns()}"),
        "consume_from_where": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        "rebalance_interval_s": 1.0,
        "persist_consumer_offset_interval_s": 0.2,
    }
    settings.update(overrides)
    return ConsumerConfig(**settings)  # type: ignore[arg-type]


async def send(cluster: LocalCluster, count: int, prefix: str = "m", topic: str = TOPIC) -> list[bytes]:
    bodies = [f"{prefix}{i}".encode() for i in range(count)]
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        for body in bodies:
            await producer.send(Message(topic, body, keys=body.decode()))
    return bodies


async def poll_until(
    consumer: PullConsumer,
    keep: Callable[[list[MessageExt]], object],
    done: Callable[[], bool],
    what: str,
    *,
    poll_s: float = 0.2,
    timeout_s: float = 15.0,
) -> None:
    """Poll ``consumer``, handing each batch to ``keep``, until ``done()``. The deadline only bounds a
    hang (what the test asserts is what arrived, never when): past it, AssertionError names ``what``."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not polled within {timeout_s:g} s")
        keep(await consumer.poll(poll_s))


SCHEDULE_STEP_S = 0.1  # each nudge of a fake clock: the schedule service's poll interval


async def schedule_pass(clock: FakeClock, schedule: ScheduleService, limit: float = float("inf")) -> None:
    """Nudge ``clock`` on, ``SCHEDULE_STEP_S`` at a time and never past ``limit``, until the broker's
    schedule service has made a delivery pass (its sleep on the clock ends only when the clock moves; a
    nudge that came while it was between passes needs another)."""
    passes = schedule.passes
    deadline = time.monotonic() + 15.0  # (a bound on a hang, not a timing)
    while schedule.passes == passes:
        if clock.time() + SCHEDULE_STEP_S <= limit:
            clock.advance(SCHEDULE_STEP_S)
        assert time.monotonic() < deadline, "the schedule service made no delivery pass"
        await asyncio.sleep(0.05)


async def nudge_until(clock: FakeClock, done: Callable[[], bool], what: str, *, timeout_s: float = 30.0) -> None:
    """Move ``clock`` on ``SCHEDULE_STEP_S`` at a time, letting the loop run between nudges, until
    ``done()``. The deadline only bounds a hang: past it, AssertionError names ``what``."""
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s:g} s"
        clock.advance(SCHEDULE_STEP_S)
        await asyncio.sleep(0.05)
