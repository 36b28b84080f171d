"""Delayed delivery follows the broker's clock: with a ``FakeClock`` the test decides when a delayed
message is due, and nothing waits for real time to pass."""

from __future__ import annotations

from pathlib import Path

from rocketq.client import Message, Producer, PullConsumer
from rocketq.client.message import MessageExt
from rocketq.testing import FakeClock, LocalCluster

from ..client.helpers import consumer_config, poll_until, schedule_pass


async def test_a_delayed_message_is_due_when_the_brokers_clock_says_so(tmp_path: Path) -> None:
    clock = FakeClock()
    async with LocalCluster(tmp_path, brokers=1, clock=clock) as cluster:
        schedule = cluster.brokers[0].schedule
        assert schedule is not None
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            await producer.send(Message("Later", b"warm-up"))
            stored_at = clock.time()  # the store time of what is put now: the broker's clock's
            await producer.send(Message("Later", b"in five seconds", delay_level=2))  # (level 2: 5 s)

        clock.advance(stored_at + 4.8 - clock.time())
        await schedule_pass(clock, schedule, limit=stored_at + 4.9)
        assert schedule.delivered == 0  # the clock is short of its time: not delivered early

        clock.advance(stored_at + 5.0 - clock.time())
        await schedule_pass(clock, schedule)
        if schedule.delivered == 0:  # (the pass that ran may have begun before the move)
            await schedule_pass(clock, schedule)
        assert schedule.delivered == 1

        consumer = PullConsumer(consumer_config(cluster, "D"))
        consumer.subscribe("Later")
        await consumer.start()
        arrived: list[MessageExt] = []
        try:
            await poll_until(
                consumer,
                arrived.extend,
                lambda: any(m.body == b"in five seconds" for m in arrived),
                "the delayed message",
            )
        finally:
            await consumer.aclose()
        delayed = [m for m in arrived if m.body == b"in five seconds"]
        assert len(delayed) == 1 and delayed[0].topic == "Later" and "DELAY" not in delayed[0].properties
