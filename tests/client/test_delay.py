"""Delayed messages with RocketMQ's real level table: level 2 is 5 s, also across a broker restart. The
brokers run on a ``FakeClock``: a record's store time and the schedule service's "now" are both its
readings, so the test decides when the message is due and nothing waits for real time to pass."""

from __future__ import annotations

from pathlib import Path

from rocketq.client import Message, Producer, PullConsumer
from rocketq.client.message import MessageExt
from rocketq.testing import FakeClock, LocalCluster

from .helpers import consumer_config, poll_until, schedule_pass


async def test_level_two_waits_five_seconds_even_across_a_restart(tmp_path: Path) -> None:
    clock = FakeClock()
    async with LocalCluster(tmp_path, brokers=1, clock=clock) as cluster:
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            await producer.send(Message("Later", b"warm-up"))  # the topic exists before the clock starts
            stored_at = clock.time()  # the clock stands still: the delayed message's store time
            await producer.send(Message("Later", b"in five seconds", delay_level=2))
        clock.advance(1.0)
        await cluster.brokers[0].aclose()  # the pending delayed message must survive this
        await cluster.start_broker(0)
        schedule = cluster.brokers[0].schedule
        assert schedule is not None

        clock.advance(stored_at + 4.8 - clock.time())
        await schedule_pass(clock, schedule, limit=stored_at + 4.9)
        assert schedule.delivered == 0  # 0.1 s short of its time after the restart: not delivered early
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
                consumer, arrived.extend, lambda: any(m.body != b"warm-up" for m in arrived), "the delayed one"
            )
        finally:
            await consumer.aclose()
    delayed = [m for m in arrived if m.body == b"in five seconds"]
    assert len(delayed) == 1, arrived
    assert delayed[0].topic == "Later" and "DELAY" not in delayed[0].properties
    assert delayed[0].store_timestamp >= int((stored_at + 5.0) * 1000)  # put again on the broker's clock
