"""A consumer started before its topic exists: it keeps asking the NameServer for the route, sooner
than its rebalance interval, and gets the first messages within seconds of the topic's creation."""

from __future__ import annotations

import asyncio
import time

from rocketq.client import PullConsumer, PushConsumer
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageExt
from rocketq.testing import LocalCluster, eventually

from .helpers import consumer_config, opened, send

LATER = "BornLater"
INTERVAL_S = 20.0  # the default rebalance interval: without the sooner retries a test would wait this long


async def create_topic(cluster: LocalCluster) -> None:
    async with AdminClient(cluster.namesrv_addr) as admin:
        await admin.update_topic(LATER, cluster="DefaultCluster", read_queues=2, write_queues=2)


async def test_a_push_consumer_started_before_its_topic_gets_messages_within_seconds(cluster: LocalCluster) -> None:
    seen: list[bytes] = []
    config = consumer_config(cluster, "Later", rebalance_interval_s=INTERVAL_S)
    consumer = opened(PushConsumer(config, lambda messages: seen.extend(m.body for m in messages)))
    consumer.subscribe(LATER)
    await consumer.start()
    assert not [queue for queue in consumer.assigned_queues if queue.topic == LATER]
    await asyncio.sleep(0.5)
    await create_topic(cluster)
    bodies = await send(cluster, 6, topic=LATER)
    # before the first periodic rebalance: the route was asked for again 1, 3 and 7 s after the start
    await eventually(lambda: sorted(seen) == sorted(bodies), timeout_s=INTERVAL_S * 0.9)
    assert len([queue for queue in consumer.assigned_queues if queue.topic == LATER]) == 4  # 2 brokers x 2
    await consumer.aclose()


async def test_a_pull_consumer_subscribed_before_its_topic_polls_its_messages(cluster: LocalCluster) -> None:
    consumer = opened(PullConsumer(consumer_config(cluster, "LaterPull", rebalance_interval_s=INTERVAL_S)))
    consumer.subscribe(LATER)
    await consumer.start()
    await create_topic(cluster)
    bodies = await send(cluster, 4, topic=LATER)
    polled: list[MessageExt] = []
    deadline = time.monotonic() + INTERVAL_S / 2
    while len(polled) < len(bodies) and time.monotonic() < deadline:
        polled.extend(await consumer.poll(0.5))
    assert sorted(m.body for m in polled) == sorted(bodies)
    await consumer.aclose()
