"""Delayed delivery follows the broker's clock: with a ``FakeClock`` the test decides when a delayed
message is due, and nothing waits for real time to pass."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from rocketq.broker.schedule import ScheduleService
from rocketq.client import Message, Producer, PullConsumer
from rocketq.client.message import MessageExt
from rocketq.testing import FakeClock, LocalCluster

from ..client.helpers import consumer_config

STEP_S = 0.1  # each nudge of the clock: the service's poll interval


async def _a_pass(clock: FakeClock, schedule: ScheduleService, limit: float = float("inf")) -> None:
    """Nudge the clock on, ``STEP_S`` at a time and never past ``limit``, until the service has made a
    delivery pass (its sleep on the clock ends only when the clock moves; a nudge that came while it
    was between passes needs another)."""
    passes = schedule.passes
    deadline = time.monotonic() + 15.0  # (a bound on a hang, not a timing)
    while schedule.passes == passes:
        if clock.time() + STEP_S <= limit:
            clock.advance(STEP_S)
        assert time.monotonic() < deadline, "the schedule service made no delivery pass"
        await asyncio.sleep(0.05)


async def test_a_delayed_message_is_due_when_the_brokers_clock_says_so(tmp_path: Path) -> None:
    clock = FakeClock()
    async with LocalCluster(tmp_path, brokers=1, clock=clock) as cluster:
        schedule = cluster.brokers[0].schedule
        assert schedule is not None
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            await producer.send(Message("Later", b"warm-up"))
            before_send = time.time()  # the message is born and stored after this ...
            await producer.send(Message("Later", b"in five seconds", delay_level=2))  # (level 2: 5 s)
            after_send = time.time()  # ... and before this: it is due between the two plus 5 s

        clock.advance(before_send + 3.0 - clock.time())
        await _a_pass(clock, schedule, limit=before_send + 4.9)
        assert schedule.delivered == 0  # the clock is short of its time: not delivered early

        clock.advance(max(0.0, after_send + 5.0 - clock.time()))
        await _a_pass(clock, schedule)
        if schedule.delivered == 0:  # (the pass that ran may have begun before the move)
            await _a_pass(clock, schedule)
        assert schedule.delivered == 1

        consumer = PullConsumer(consumer_config(cluster, "D"))
        consumer.subscribe("Later")
        await consumer.start()
        arrived: list[MessageExt] = []
        try:
            for _ in range(150):  # (polls of at most 0.1 s each: a bound on a hang, not a timing)
                arrived.extend(await consumer.poll(0.1))
                if any(m.body == b"in five seconds" for m in arrived):
                    break
        finally:
            await consumer.aclose()
        delayed = [m for m in arrived if m.body == b"in five seconds"]
        assert len(delayed) == 1 and delayed[0].topic == "Later" and "DELAY" not in delayed[0].properties
