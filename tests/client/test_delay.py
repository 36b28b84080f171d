"""Delayed messages with RocketMQ's real level table: level 2 is 5 s, also across a broker restart."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from rocketq.client import Message, Producer, PullConsumer
from rocketq.client.message import MessageExt
from rocketq.testing import LocalCluster

from .helpers import consumer_config


async def test_level_two_waits_five_seconds_even_across_a_restart(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path, brokers=1) as cluster:
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            await producer.send(Message("Later", b"warm-up"))  # the topic exists before the clock starts
            sent_at = time.monotonic()
            await producer.send(Message("Later", b"in five seconds", delay_level=2))
        await asyncio.sleep(1.0)
        await cluster.brokers[0].aclose()  # the pending delayed message must survive this
        await cluster.start_broker(0)
        consumer = PullConsumer(consumer_config(cluster, "D"))
        consumer.subscribe("Later")
        await consumer.start()
        arrived: list[tuple[float, MessageExt]] = []
        try:
            while time.monotonic() - sent_at < 30.0 and not any(m.body != b"warm-up" for _, m in arrived):
                arrived.extend((time.monotonic() - sent_at, m) for m in await consumer.poll(0.1))
        finally:
            await consumer.aclose()
    delayed = [(at, m) for at, m in arrived if m.body == b"in five seconds"]
    assert len(delayed) == 1, arrived
    at, message = delayed[0]
    assert at >= 5.0, at  # not before its time (how soon after it depends on how busy the machine is)
    assert message.topic == "Later" and "DELAY" not in message.properties
