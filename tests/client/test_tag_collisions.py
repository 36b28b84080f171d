"""Tag filters whose tags share a Java ``String.hashCode`` with tags nobody subscribed to.

The broker filters by the ConsumeQueue's tag hash code, so "BB" passes a filter on "Aa" (both hash to
2112); the consumers then filter by the tag's text, as every RocketMQ client does. Each test shows the
broker letting the colliding tag through and the consumer dropping it.
"""

from __future__ import annotations

from collections import Counter

from rocketq.client import Message, MessageQueue, Producer, PullConsumer, PushConsumer
from rocketq.client.message import decode_messages
from rocketq.client.pull import pull_request
from rocketq.common.message import java_string_hash
from rocketq.protocol import ResponseCode
from rocketq.remoting import RemotingClient
from rocketq.testing import LocalCluster, eventually

from .helpers import TOPIC, consumer_config, opened

SUBSCRIBED = "Aa || C"  # "Aa" collides with "BB", "C" with nothing sent
TAGS = ("Aa", "BB", "C", "D")  # sent round-robin
WANTED = Counter({"Aa": 10, "C": 10})


def test_the_tags_collide() -> None:
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert len({java_string_hash(tag) for tag in ("Aa", "C", "D")}) == 3


async def send_tagged(cluster: LocalCluster) -> None:
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        for i in range(40):
            await producer.send(Message(TOPIC, f"{TAGS[i % 4]}-{i}".encode(), tags=TAGS[i % 4]))
    # a send is answered once stored; its ConsumeQueue entry may be dispatched just after the answer
    await eventually(lambda: filed(cluster) == 40, what="the 40 messages dispatched to their queues")


def filed(cluster: LocalCluster) -> int:
    return sum(broker.store.get_max_offset_in_queue(TOPIC, q) for broker in cluster.brokers for q in range(4))


async def broker_passes(cluster: LocalCluster) -> Counter[str]:
    """What the brokers answer a raw tag-filtered pull of every queue: the colliding tag included."""
    seen: Counter[str] = Counter()
    client = RemotingClient()
    try:
        for broker in cluster.brokers:
            for queue_id in range(4):
                queue = MessageQueue(TOPIC, broker.config.broker_name, queue_id)
                response = await client.invoke(broker.address, pull_request("RAW", queue, 0, 32, SUBSCRIBED), 5)
                if response.code == ResponseCode.SUCCESS:
                    seen.update(m.tags for m in decode_messages(response.body) if m.tags)
    finally:
        await client.aclose()
    return seen


async def test_push_consumer_drops_the_colliding_tag(cluster: LocalCluster) -> None:
    seen: list[str | None] = []
    config = consumer_config(cluster, "COLLIDE_PUSH")
    consumer = opened(PushConsumer(config, lambda ms: seen.extend(m.tags for m in ms)))
    consumer.subscribe(TOPIC, SUBSCRIBED)
    await consumer.start()
    await send_tagged(cluster)
    assert await broker_passes(cluster) == {"Aa": 10, "BB": 10, "C": 10}
    await eventually(lambda: len(seen) >= 20)
    await eventually(lambda: consumer.consumed >= 20)
    assert Counter(seen) == WANTED
    await consumer.aclose()


async def test_pull_consumer_drops_the_colliding_tag(cluster: LocalCluster) -> None:
    consumer = opened(PullConsumer(consumer_config(cluster, "COLLIDE_PULL")))
    consumer.subscribe(TOPIC, SUBSCRIBED)
    await consumer.start()
    await send_tagged(cluster)
    assert await broker_passes(cluster) == {"Aa": 10, "BB": 10, "C": 10}
    seen: Counter[str | None] = Counter()
    while sum(seen.values()) < 20:
        batch = await consumer.poll(10.0)
        assert batch, "the pull consumer stopped short of the 20 wanted messages"
        seen.update(m.tags for m in batch)
    seen.update(m.tags for m in await consumer.poll(0.5))  # nothing more arrives
    assert seen == WANTED
    await consumer.aclose()


async def test_a_queue_of_only_colliding_tags_is_consumed_past(cluster: LocalCluster) -> None:
    """Every message the broker passes is one the client drops: the queue's offset still moves on."""
    queue = MessageQueue(TOPIC, cluster.brokers[0].config.broker_name, 0)
    consumer = opened(PushConsumer(consumer_config(cluster, "COLLIDE_ONLY"), lambda ms: None))
    consumer.subscribe(TOPIC, "Aa")
    await consumer.start()
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        for _ in range(5):
            await producer.send_orderly(Message(TOPIC, b"bb", tags="BB"), selector=lambda queues, m, a: queue)
    await eventually(lambda: cluster.brokers[0].offsets.query("COLLIDE_ONLY", TOPIC, 0) == 5)
    assert consumer.consumed == 0
    await consumer.aclose()
