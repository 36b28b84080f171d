"""Clients of one process share their connections and client id (as Java's MQClientInstance): a producer
and a consumer with the same client configuration reach a broker over one connection; requests the broker
sends go to the member of the right group; one member leaving keeps the others connected; a different
configuration, or a second member of a group, gets a connection and client id of its own."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from rocketq.client import (
    ClientConfig,
    ConsumeFromWhere,
    ConsumerConfig,
    Message,
    Producer,
    ProducerConfig,
    PushConsumer,
    TransactionProducer,
    TransactionState,
)
from rocketq.client.admin import AdminClient
from rocketq.client.admin_consumers import consumer_running_info
from rocketq.client.message import MessageExt
from rocketq.testing import FakeClock, LocalCluster, eventually

from .helpers import TOPIC, opened

CHECK_INTERVAL_S = 60.0  # the broker's default transactionCheckInterval


def connections_of(cluster: LocalCluster, producer_group: str, consumer_group: str) -> set[int]:
    """The broker connections (by identity) the first broker knows for the two groups."""
    clients = cluster.brokers[0].clients
    producers = clients.producers.get(producer_group, {})
    return set(producers) | {id(channel) for channel in clients.channels_of(consumer_group)}


def push_consumer(client: ClientConfig, group: str, received: list[bytes]) -> PushConsumer:
    config = ConsumerConfig(
        group=group,
        client=client,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        rebalance_interval_s=1.0,
    )

    async def listener(messages: list[MessageExt]) -> None:
        received.extend(message.body for message in messages)

    consumer = opened(PushConsumer(config, listener=listener))
    consumer.subscribe(TOPIC)
    return consumer


async def test_a_producer_and_a_consumer_of_one_process_share_one_connection(cluster: LocalCluster) -> None:
    client = ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name="app")
    received: list[bytes] = []
    consumer = push_consumer(client, "Readers", received)
    await consumer.start()
    async with Producer(ProducerConfig(group="Writers", client=client)) as producer:
        assert producer.instance.client_id == consumer.client_id
        await producer.send(Message(TOPIC, b"through one connection"))
        await eventually(lambda: received == [b"through one connection"], what="the message consumed")
        await producer.instance.heartbeat()  # the producer is known to every broker now
        assert len(connections_of(cluster, "Writers", "Readers")) == 1
    # the producer left: the consumer keeps its connection and goes on consuming
    async with Producer(ProducerConfig(group="Writers2", client=client)) as again:
        await again.send(Message(TOPIC, b"after the first producer left"))
        assert again.instance.client_id == consumer.client_id
    await eventually(lambda: len(received) == 2, what="the second message consumed")
    await consumer.aclose()


async def test_different_configurations_and_members_of_one_group_do_not_share(cluster: LocalCluster) -> None:
    app = ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name="app")
    other = ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name="other")
    async with (
        Producer(ProducerConfig(group="A", client=app)) as first,
        Producer(ProducerConfig(group="B", client=app)) as second,
        Producer(ProducerConfig(group="A", client=app)) as same_group,
        Producer(ProducerConfig(group="C", client=other)) as elsewhere,
    ):
        assert first.instance.client_id == second.instance.client_id
        assert same_group.instance.client_id != first.instance.client_id
        assert elsewhere.instance.client_id not in {first.instance.client_id, same_group.instance.client_id}
        for producer in (first, second, same_group, elsewhere):
            await producer.send(Message(TOPIC, b"x"))


async def test_transaction_checks_reach_the_producer_of_their_group(tmp_path: Path) -> None:
    clock = FakeClock()
    async with LocalCluster(tmp_path, clock=clock) as cluster:
        client = ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name="app")
        asked: dict[str, list[bytes]] = {"Payments": [], "Refunds": []}

        def checker(group: str) -> Callable[[MessageExt], TransactionState]:
            def check(message: MessageExt) -> TransactionState:
                asked[group].append(message.body)
                return TransactionState.COMMIT

            return check

        def undecided(message: Message, arg: object) -> TransactionState:
            return TransactionState.UNKNOWN

        payments = TransactionProducer(
            ProducerConfig(group="Payments", client=client), local_transaction=undecided, check=checker("Payments")
        )
        refunds = TransactionProducer(
            ProducerConfig(group="Refunds", client=client), local_transaction=undecided, check=checker("Refunds")
        )
        async with payments, refunds:
            assert payments.instance.client_id == refunds.instance.client_id
            await payments.send_message_in_transaction(Message(TOPIC, b"pay"))
            await refunds.send_message_in_transaction(Message(TOPIC, b"refund"))
            checks = cluster.brokers[0].transaction_checks
            assert checks is not None
            clock.advance(CHECK_INTERVAL_S)
            await asyncio.wait_for(checks.wait_rounds(1), 10)
            await eventually(lambda: asked["Payments"] and asked["Refunds"], what="both checks answered")
        assert asked == {"Payments": [b"pay"], "Refunds": [b"refund"]}


async def test_a_brokers_request_reaches_the_consumer_of_its_group(cluster: LocalCluster) -> None:
    """GET_CONSUMER_RUNNING_INFO for each of two consumer groups sharing a connection is answered by
    that group's consumer (its subscriptions hold its own retry topic)."""
    client = ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name="app")
    received: list[bytes] = []
    consumers = {group: push_consumer(client, group, received) for group in ("One", "Two")}
    for consumer in consumers.values():
        await consumer.start()
    assert consumers["One"].client_id == consumers["Two"].client_id
    async with AdminClient(cluster.namesrv_addr) as admin:
        for group, consumer in consumers.items():
            info = await consumer_running_info(admin, group, consumer.client_id)
            topics = {subscription.topic for subscription in info.subscription_set}
            assert topics == {TOPIC, f"%RETRY%{group}"}
    for consumer in consumers.values():
        await consumer.aclose()
