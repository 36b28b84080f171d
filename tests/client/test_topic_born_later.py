"""A consumer started before its topic exists: it keeps asking the NameServer for the route, sooner
than its rebalance interval (after 1 s, then 2, 4, ...), and gets the first messages once it finds it.
The consumers run on a ``FakeClock`` moved on 1 s at a time, never as far as the rebalance interval or
the route poll: only the sooner asking can find the topic, and nothing waits for real time to pass."""

from __future__ import annotations

from rocketq.client import ClientConfig, ConsumerConfig, PullConsumer, PushConsumer
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageExt
from rocketq.testing import FakeClock, LocalCluster, eventually

from .helpers import consumer_config, opened, poll_until, send

LATER = "BornLater"
INTERVAL_S = 20.0  # the default rebalance interval: without the sooner asking, nothing happens before it
SOONER_S = 7.0  # the asking 1, 3 and 7 s after the start (the topic is there by the second)
PARKED = {"push": 5, "pull": 4}
"""The periodic tasks that sleep on a consumer's clock: its client's route poll and heartbeat, its offset
persist and rebalance, and a push consumer's watch on overdue listener calls."""


def clocked_config(cluster: LocalCluster, group: str, clock: FakeClock) -> ConsumerConfig:
    client = ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name=f"later-{group}", clock=clock)
    return consumer_config(cluster, group, client=client, rebalance_interval_s=INTERVAL_S)


async def create_topic(cluster: LocalCluster) -> None:
    async with AdminClient(cluster.namesrv_addr) as admin:
        await admin.update_topic(LATER, cluster="DefaultCluster", read_queues=2, write_queues=2)


async def tick(clock: FakeClock, parked: int) -> None:
    """Move the clock 1 s on and wait until the consumer's periodic tasks are all asleep on it again (what
    the move woke has run: a rebalance, its route lookup)."""
    clock.advance(1.0)
    await eventually(lambda: clock.sleepers >= parked, what="the consumer's periodic tasks asleep on the clock")


async def first_ticks(clock: FakeClock, parked: int, cluster: LocalCluster) -> list[bytes]:
    """The clock moved on ``SOONER_S``, the topic created (and messages sent) after its first second."""
    began = clock.time()
    await eventually(lambda: clock.sleepers >= parked, what="the consumer's periodic tasks asleep on the clock")
    await tick(clock, parked)  # the first asking: no such topic yet
    await create_topic(cluster)
    bodies = await send(cluster, 6, topic=LATER)
    for _ in range(int(SOONER_S) - 1):
        await tick(clock, parked)
    assert clock.time() - began < INTERVAL_S
    return bodies


async def test_a_push_consumer_started_before_its_topic_finds_it_sooner_than_its_rebalance(
    cluster: LocalCluster,
) -> None:
    clock = FakeClock()
    seen: list[bytes] = []
    consumer = opened(PushConsumer(clocked_config(cluster, "Later", clock), lambda ms: seen.extend(m.body for m in ms)))
    consumer.subscribe(LATER)
    await consumer.start()
    assert not [queue for queue in consumer.assigned_queues if queue.topic == LATER]
    bodies = await first_ticks(clock, PARKED["push"], cluster)
    # (the wait bounds a hang only: the clock no longer moves, so what arrives was found by the asking)
    await eventually(lambda: sorted(seen) == sorted(bodies), what="the messages of the topic made after the start")
    assert len([queue for queue in consumer.assigned_queues if queue.topic == LATER]) == 4  # 2 brokers x 2
    await consumer.aclose()


async def test_a_pull_consumer_subscribed_before_its_topic_polls_its_messages(cluster: LocalCluster) -> None:
    clock = FakeClock()
    consumer = opened(PullConsumer(clocked_config(cluster, "LaterPull", clock)))
    consumer.subscribe(LATER)
    await consumer.start()
    bodies = await first_ticks(clock, PARKED["pull"], cluster)
    polled: list[MessageExt] = []
    await poll_until(
        consumer, polled.extend, lambda: len(polled) >= len(bodies), "the messages of the topic made later"
    )
    assert sorted(m.body for m in polled) == sorted(bodies)
    await consumer.aclose()
