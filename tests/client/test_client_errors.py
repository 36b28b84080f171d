"""What the clients raise: the "not started" error before ``start()`` (never an AssertionError), and
the ``MQClientError`` subclasses for bad input, missing routes and unreachable servers, each still
caught by ``except MQClientError``."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from rocketq.client import (
    ClientConfig,
    ConsumerConfig,
    Message,
    MessageQueue,
    MQClientError,
    MQConnectionError,
    Producer,
    ProducerConfig,
    PullConsumer,
    RouteNotFoundError,
    ValidationError,
)
from rocketq.client.errors import BrokerResponseError
from rocketq.testing import LocalCluster

from .helpers import TOPIC, consumer_config

MESSAGE = Message(TOPIC, b"body")


@pytest.fixture
def refused_addr() -> Iterator[str]:
    """An address on loopback that refuses connections: a socket bound, never listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.parametrize("method", ["send", "send_oneway", "send_orderly", "send_batch", "send_async"])
async def test_a_producer_used_before_start_says_so(method: str) -> None:
    producer = Producer(group="P", namesrv_addr="127.0.0.1:9")
    calls = {
        "send": lambda: producer.send(MESSAGE),
        "send_oneway": lambda: producer.send_oneway(MESSAGE),
        "send_orderly": lambda: producer.send_orderly(MESSAGE, sharding_key="k"),
        "send_batch": lambda: producer.send_batch([MESSAGE]),
        "send_async": lambda: producer.send_async(MESSAGE),
    }
    with pytest.raises(MQClientError, match="not started") as caught:
        await calls[method]()
    assert type(caught.value) is MQClientError


async def test_a_closed_producer_says_so(cluster: LocalCluster) -> None:
    producer = await Producer(group="P", namesrv_addr=cluster.namesrv_addr).start()
    await producer.send(MESSAGE)
    await producer.aclose()
    with pytest.raises(MQClientError, match="closed"):
        await producer.send(MESSAGE)
    with pytest.raises(MQClientError, match="closed"):
        await producer.send_batch([MESSAGE])


async def test_a_pull_consumer_polled_before_start_says_so() -> None:
    consumer = PullConsumer(ConsumerConfig(group="G"))
    with pytest.raises(MQClientError, match="not started"):
        await consumer.poll(0.1)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (Message(TOPIC, b""), "body is empty"),
        (Message("bad topic!", b"x"), "topic"),
        (Message(TOPIC, b"x", properties={"": "v"}), "empty"),
        (Message(TOPIC, b"x", keys="a\x01b"), "\\\\x01"),
    ],
)
async def test_bad_messages_are_validation_errors(cluster: LocalCluster, message: Message, expected: str) -> None:
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        with pytest.raises(ValidationError, match=expected) as caught:
            await producer.send(message)
        with pytest.raises(ValidationError):
            await producer.send_batch([message])
    assert isinstance(caught.value, MQClientError) and isinstance(caught.value, ValueError)


async def test_bad_arguments_are_validation_errors(cluster: LocalCluster) -> None:
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        with pytest.raises(ValidationError, match="exactly one"):
            await producer.send_orderly(MESSAGE)
        with pytest.raises(ValidationError, match="empty batch"):
            await producer.send_batch([])
        with pytest.raises(ValidationError, match="one topic"):
            await producer.send_batch([MESSAGE, Message("Other", b"x")])
        with pytest.raises(ValidationError, match="queue's"):
            await producer.send_batch([MESSAGE], queue=MessageQueue("Other", "broker-a", 0))
    with pytest.raises(ValidationError, match="allocate strategy"):
        PullConsumer(consumer_config(cluster, allocate_strategy="nonsense"))


async def test_a_topic_nobody_knows_is_a_missing_route(cluster: LocalCluster) -> None:
    consumer = PullConsumer(consumer_config(cluster))
    with pytest.raises(RouteNotFoundError, match="Nowhere") as caught:
        await consumer.fetch_queues("Nowhere")
    assert isinstance(caught.value, MQClientError)
    assert not isinstance(caught.value, BrokerResponseError)


async def test_no_template_route_is_a_missing_route(cluster: LocalCluster) -> None:
    config = ProducerConfig(group="P", client=ClientConfig(namesrv_addr=cluster.namesrv_addr), create_topic_key="NoT")
    async with Producer(config) as producer:
        with pytest.raises(RouteNotFoundError, match="topic 'Fresh' does not exist"):
            await producer.send(Message("Fresh", b"x"))


async def test_an_unreachable_name_server_is_a_connection_error(refused_addr: str) -> None:
    async with Producer(group="P", namesrv_addr=refused_addr) as producer:
        with pytest.raises(MQConnectionError, match="no NameServer answered") as caught:
            await producer.send(MESSAGE)
        with pytest.raises(MQConnectionError):
            await producer.send_orderly(MESSAGE, sharding_key="k")
    assert isinstance(caught.value, MQClientError)
    assert refused_addr in str(caught.value)
    consumer = PullConsumer(ConsumerConfig(group="G", client=ClientConfig(namesrv_addr=refused_addr)))
    with pytest.raises(MQConnectionError):
        await consumer.fetch_queues(TOPIC)


async def test_a_broker_gone_after_routing_is_a_connection_error(cluster: LocalCluster) -> None:
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        await producer.send(MESSAGE)  # learns the route
        for broker in list(cluster.brokers):
            await broker.aclose()
        with pytest.raises(MQConnectionError, match="failed after"):
            await producer.send(MESSAGE, timeout=5)
