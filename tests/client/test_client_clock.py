"""A client's periodic work runs on the clock its ``ClientConfig`` gives: route polls and rebalancing
happen when a fake clock is advanced past their intervals, with no real waiting."""

from __future__ import annotations

from rocketq.client import ClientConfig, MessageQueue, PullConsumer
from rocketq.client.admin import AdminClient
from rocketq.testing import FakeClock, LocalCluster, eventually

from .helpers import TOPIC, consumer_config, opened


def queues_of(consumer: PullConsumer) -> set[MessageQueue]:
    return {queue for queue in consumer.assignment if queue.topic == TOPIC}  # not its retry topic's


async def test_a_consumer_finds_new_queues_when_its_clock_passes_the_route_poll(cluster: LocalCluster) -> None:
    clock = FakeClock()
    client = ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name="clocked", clock=clock)
    config = consumer_config(cluster, group="Clocked", client=client, rebalance_interval_s=20.0)
    consumer = opened(PullConsumer(config))
    consumer.subscribe(TOPIC)
    await consumer.start()
    await eventually(lambda: len(queues_of(consumer)) == 8, what="the 8 queues of two brokers")
    async with AdminClient(cluster.namesrv_addr) as admin:
        await admin.update_topic(TOPIC, cluster="DefaultCluster", read_queues=6, write_queues=6)
    # the route poll (30 s) learns of the 12 queues; the rebalance (every 20 s) takes them
    for _ in range(3):
        clock.advance(20)
        await eventually(lambda: clock.sleepers >= 2, what="the periodic tasks waiting on the clock again")
    await eventually(lambda: len(queues_of(consumer)) == 12, what="the queues added to the topic")
    await consumer.aclose()
