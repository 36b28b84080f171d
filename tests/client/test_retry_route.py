"""A new group's retry topic is routed to every broker by the time its first member has started: the
brokers create it on the member's first heartbeat and register it before answering, and the member asks
for its route after its heartbeats. Otherwise a message sent back to a broker missing from the route
would wait for the next route poll (30 s by default)."""

from __future__ import annotations

from rocketq.client import PushConsumer
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageExt
from rocketq.testing import LocalCluster

from .helpers import TOPIC, consumer_config, opened


def ignore(messages: list[MessageExt]) -> None:
    del messages


async def test_a_new_groups_retry_topic_is_routed_to_every_broker_once_its_member_started(
    cluster: LocalCluster,
) -> None:
    for number in range(3):  # new groups, each racing the brokers' registrations
        group = f"FreshGroup{number}"
        consumer = opened(PushConsumer(consumer_config(cluster, group), ignore))
        consumer.subscribe(TOPIC)
        await consumer.start()
        retry = f"%RETRY%{group}"
        assert {queue.broker_name for queue in consumer.assigned_queues if queue.topic == retry} == {
            "broker-a",
            "broker-b",
        }
        async with AdminClient(cluster.namesrv_addr) as admin:
            route = await admin.topic_route(retry)
        assert {broker.broker_name for broker in route.broker_datas} == {"broker-a", "broker-b"}
        await consumer.aclose()
