"""What consumers tell brokers about themselves: heartbeats (subscriptions) and unregistering on close."""

from __future__ import annotations

import dataclasses
import time

from rocketq.broker.server import Broker
from rocketq.client import ClientConfig, MessageQueue, PushConsumer
from rocketq.client.admin import AdminClient
from rocketq.protocol import HeartbeatData, RemotingCommand, RequestCode
from rocketq.protocol.bodies import SubscriptionData
from rocketq.protocol.headers import UnregisterClientRequestHeader
from rocketq.testing import FakeClock, LocalCluster, eventually

from .broker_taps import tap
from .helpers import TOPIC, consumer_config, opened

TAG_A_HASH = 2598919  # Java: "TagA".hashCode()
TAG_B_HASH = 2598920
TAG_C_HASH = 2598921


def record_heartbeats(cluster: LocalCluster, group: str) -> list[SubscriptionData]:
    """Every subscription of ``group`` that the first broker receives in a heartbeat, as sent."""
    received: list[SubscriptionData] = []

    def seen(request: RemotingCommand, response: RemotingCommand | None) -> None:
        for consumer in HeartbeatData.decode(request.body).consumer_data_set:
            if consumer.group_name == group:
                received.extend(consumer.subscription_data_set)

    tap(cluster.brokers[0], RequestCode.HEART_BEAT, seen)
    return received


def of_topic(subscriptions: list[SubscriptionData], topic: str) -> list[SubscriptionData]:
    return [s for s in subscriptions if s.topic == topic]


async def test_heartbeat_carries_tag_hash_codes_and_a_version_fixed_per_subscription(cluster: LocalCluster) -> None:
    """Like Java's SubscriptionData: ``codeSet`` holds each tag's ``String.hashCode`` and ``subVersion``
    is stamped when the subscription is made, so every heartbeat repeats it until it changes."""
    received = record_heartbeats(cluster, "HB")
    clock = FakeClock()  # each heartbeat period passes when the test moves it on
    client = ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name=f"hb{time.monotonic_ns()}", clock=clock)
    before = int(time.time() * 1000)
    consumer = opened(PushConsumer(consumer_config(cluster, "HB", client=client), lambda messages: None))
    consumer.subscribe(TOPIC, "TagA || TagB")
    await consumer.start()
    await eventually(lambda: of_topic(received, TOPIC), what="the heartbeat of the start")
    for period in range(2):  # two periodic heartbeats repeat it
        # (each move once the consumer's periodic tasks are all asleep on the clock again: the client's
        # route poll and heartbeat, the consumer's offset persist, rebalance and overdue-call watch)
        await eventually(lambda: clock.sleepers >= 5, what="the consumer's periodic tasks asleep on the clock")
        sent = len(of_topic(received, TOPIC))
        clock.advance(client.heartbeat_broker_interval_s)
        await eventually(lambda n=sent: len(of_topic(received, TOPIC)) > n, what=f"periodic heartbeat {period + 1}")

    heartbeats = of_topic(received, TOPIC)
    first = heartbeats[0]
    assert first.sub_string == "TagA || TagB"
    assert first.tags_set == ["TagA", "TagB"]
    assert first.code_set == [TAG_A_HASH, TAG_B_HASH]
    assert before <= first.sub_version <= int(time.time() * 1000)
    assert all(heartbeat == first for heartbeat in heartbeats)  # the same version every time
    retry = of_topic(received, "%RETRY%HB")
    assert retry and retry[0].code_set == [] and {s.sub_version for s in retry} == {retry[0].sub_version}
    async with AdminClient(cluster.namesrv_addr) as admin:
        seen = (await admin.consumer_connection("HB")).subscription_table[TOPIC]
    assert (seen.sub_version, seen.code_set) == (first.sub_version, first.code_set)

    consumer.subscribe(TOPIC, "TagC")  # a changed subscription is a new version
    await eventually(lambda: of_topic(received, TOPIC)[-1].sub_string == "TagC")
    changed = of_topic(received, TOPIC)[-1]
    assert changed.code_set == [TAG_C_HASH] and changed.sub_version > first.sub_version
    await consumer.aclose()


def topic_queues(consumer: PushConsumer) -> set[MessageQueue]:
    return {q for q in consumer.assigned_queues if q.topic == TOPIC}


async def test_a_closing_member_unregisters_and_the_others_take_its_queues_at_once(cluster: LocalCluster) -> None:
    """aclose() sends UNREGISTER_CLIENT while its connections are still open: each broker drops the
    member from the group then, not when the connection closes, and tells the remaining member
    (NOTIFY_CONSUMER_IDS_CHANGED), which takes every queue without waiting for its next rebalance."""
    clock = FakeClock()  # never moved: no periodic rebalance happens, only those the brokers ask for
    client = ClientConfig(namesrv_addr=cluster.namesrv_addr, clock=clock)
    members = [
        opened(
            PushConsumer(
                consumer_config(
                    cluster,
                    "Leave",
                    client=dataclasses.replace(client, instance_name=f"leave{n}"),
                    rebalance_interval_s=60.0,
                ),
                lambda messages: None,
            )
        )
        for n in range(2)
    ]
    for consumer in members:
        consumer.subscribe(TOPIC)
        await consumer.start()
    await eventually(lambda: [len(topic_queues(m)) for m in members] == [4, 4], what="the queues shared")
    leaving, staying = members

    unregistered: list[tuple[str, list[str], bool]] = []  # broker, the group's members then, connection open
    for broker in cluster.brokers:

        def seen(request: RemotingCommand, response: RemotingCommand | None, broker: Broker = broker) -> None:
            client_id = UnregisterClientRequestHeader.from_ext_fields(request.ext_fields).client_id
            connection_open = any(c.attributes.get("client_id") == client_id and c.is_open for c in broker.connections)
            if client_id == leaving.client_id:
                unregistered.append((broker.config.broker_name, broker.clients.consumer_ids("Leave"), connection_open))

        tap(broker, RequestCode.UNREGISTER_CLIENT, seen)

    await leaving.aclose()
    assert sorted(unregistered) == [
        ("broker-a", [staying.client_id], True),
        ("broker-b", [staying.client_id], True),
    ]
    # the members' clock stands still, so no periodic rebalance runs: only the brokers' notification can
    # move the queues (the wait bounds a hang only)
    await eventually(lambda: len(topic_queues(staying)) == 8, what="the leaving member's queues taken over")
