"""A subscription group's consumeEnable and consumeBroadcastEnable (``rocketq admin updateSubGroup``), end to end:
the broker refuses the pulls with NO_PERMISSION, consumers wait ``pull_time_delay_when_exception_s`` before
each retry (no spinning, no crash) and consume everything once the group is allowed again. The consumers
run on a ``FakeClock``: the test moves it past the retry delay, so a slow machine cannot change what is
seen."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from rocketq.client import ClientConfig, ConsumerConfig, MessageModel, PushConsumer
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageExt
from rocketq.protocol import PullMessageRequestHeader, RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.bodies import SubscriptionGroupConfigBody
from rocketq.testing import FakeClock, LocalCluster, eventually

from .broker_taps import tap
from .helpers import TOPIC, consumer_config, opened, send

RETRY_DELAY_S = 0.5
QUEUES = 8  # TOPIC's queues over both brokers
PERIODIC = 5
"""The periodic tasks of a push consumer asleep on its clock: its client's route poll and heartbeat, its
offset persist and rebalance, its watch on overdue listener calls."""

Refusals = list[tuple[str, int, str]]


def refusals(cluster: LocalCluster, group: str) -> Refusals:
    """(broker, queue id, remark) of every NO_PERMISSION answer to ``group``'s pulls of TOPIC."""
    refused: Refusals = []
    for broker in cluster.brokers:

        def seen(
            request: RemotingCommand, response: RemotingCommand | None, name: str = broker.config.broker_name
        ) -> None:
            header = PullMessageRequestHeader.from_ext_fields(request.ext_fields)
            if header.consumer_group != group or header.topic != TOPIC:
                return
            if response is not None and response.code == ResponseCode.NO_PERMISSION:
                refused.append((name, header.queue_id, response.remark or ""))

        tap(broker, RequestCode.PULL_MESSAGE, seen)
    return refused


async def set_group(cluster: LocalCluster, group: str, **settings: bool) -> None:
    async with AdminClient(cluster.namesrv_addr) as admin:
        await admin.update_subscription_group(SubscriptionGroupConfigBody(group_name=group, **settings))


def clocked(cluster: LocalCluster, group: str, clock: FakeClock, **overrides: object) -> ConsumerConfig:
    client = ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name=f"perm-{group}", clock=clock)
    return consumer_config(cluster, group, client=client, pull_time_delay_when_exception_s=RETRY_DELAY_S, **overrides)


def tries(refused: Refusals) -> Counter[tuple[str, int]]:
    """How many pulls of each queue were refused."""
    return Counter((broker, queue_id) for broker, queue_id, _ in refused)


async def settled(clock: FakeClock, waiting: int) -> None:
    """Wait until ``waiting`` refused queues and the consumer's periodic tasks are all asleep on the
    clock (what its last move woke has run)."""
    await eventually(lambda: clock.sleepers >= PERIODIC + waiting, what="every refused queue waiting on the clock")


async def assert_backed_off(clock: FakeClock, refused: Refusals, waiting: int) -> None:
    """Each refused queue waits ``RETRY_DELAY_S`` on the consumer's clock before it pulls again: none
    before the clock moved that far, each once when it did (no spinning, no waiting on real time).
    ``waiting``: the queues refused, TOPIC's and a clustering consumer's retry topic's (one a broker)."""
    await eventually(lambda: len(tries(refused)) == QUEUES, what="a refused pull of every queue")
    await settled(clock, waiting)
    assert set(tries(refused).values()) == {1}
    clock.advance(RETRY_DELAY_S * 0.9)
    await settled(clock, waiting)
    assert set(tries(refused).values()) == {1}  # short of the delay: no queue asked again
    clock.advance(RETRY_DELAY_S * 0.1)
    await eventually(lambda: set(tries(refused).values()) == {2}, what="every queue asking again")
    await settled(clock, waiting)
    assert set(tries(refused).values()) == {2}  # once each


async def test_a_group_that_may_not_consume_is_refused_until_enabled(cluster: LocalCluster) -> None:
    await set_group(cluster, "Off", consume_enable=False)
    refused = refusals(cluster, "Off")
    got: list[bytes] = []
    clock = FakeClock()
    consumer = opened(
        PushConsumer(clocked(cluster, "Off", clock), lambda messages: got.extend(m.body for m in messages))
    )
    consumer.subscribe(TOPIC)
    await consumer.start()
    bodies = await send(cluster, 16)
    await assert_backed_off(clock, refused, QUEUES + 2)
    assert got == []  # every pull was refused
    assert {remark for *_, remark in refused} == {"subscription group no permission, Off"}

    await set_group(cluster, "Off", consume_enable=True)
    clock.advance(RETRY_DELAY_S)
    await eventually(lambda: sorted(got) == sorted(bodies), what="the messages once the group may consume")
    await consumer.aclose()


async def test_broadcasting_is_refused_when_the_group_disables_it(cluster: LocalCluster, tmp_path: Path) -> None:
    await set_group(cluster, "NoBroadcast", consume_broadcast_enable=False)
    refused = refusals(cluster, "NoBroadcast")
    got: list[bytes] = []
    clock = FakeClock()
    config = clocked(
        cluster, "NoBroadcast", clock, message_model=MessageModel.BROADCASTING, offset_store_dir=tmp_path / "offsets"
    )
    broadcasting = opened(PushConsumer(config, lambda messages: got.extend(m.body for m in messages)))
    broadcasting.subscribe(TOPIC)
    await broadcasting.start()
    bodies = await send(cluster, 16)
    await assert_backed_off(clock, refused, QUEUES)
    assert got == []  # every pull was refused
    assert {remark for *_, remark in refused} == {"the consumer group[NoBroadcast] can not consume by broadcast way"}

    await set_group(cluster, "NoBroadcast", consume_broadcast_enable=True)
    clock.advance(RETRY_DELAY_S)
    await eventually(lambda: sorted(got) == sorted(bodies), what="the messages once the group may broadcast")
    await broadcasting.aclose()


async def test_clustering_members_of_a_group_without_broadcast_consume(cluster: LocalCluster) -> None:
    await set_group(cluster, "Clustered", consume_broadcast_enable=False)
    got: list[MessageExt] = []
    consumer = opened(PushConsumer(consumer_config(cluster, "Clustered"), got.extend))
    consumer.subscribe(TOPIC)
    await consumer.start()
    bodies = await send(cluster, 16)
    await eventually(lambda: sorted(m.body for m in got) == sorted(bodies), what="the messages")
    await consumer.aclose()
