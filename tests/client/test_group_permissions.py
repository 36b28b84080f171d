"""A subscription group's consumeEnable and consumeBroadcastEnable (``rocketq admin updateSubGroup``), end to end:
the broker refuses the pulls with NO_PERMISSION, consumers wait ``pull_time_delay_when_exception_s`` before
each retry (no spinning, no crash) and consume everything once the group is allowed again."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

from rocketq.client import MessageModel, PushConsumer
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageExt
from rocketq.protocol import PullMessageRequestHeader, RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.bodies import SubscriptionGroupConfigBody
from rocketq.testing import LocalCluster, eventually

from .broker_taps import tap
from .helpers import TOPIC, consumer_config, opened, send

RETRY_DELAY_S = 0.5
QUEUES = 8  # TOPIC's queues over both brokers


def refusals(cluster: LocalCluster, group: str) -> list[tuple[float, str, int, str]]:
    """(time, broker, queue id, remark) of every NO_PERMISSION answer to ``group``'s pulls of TOPIC."""
    refused: list[tuple[float, str, int, str]] = []
    for broker in cluster.brokers:

        def seen(
            request: RemotingCommand, response: RemotingCommand | None, name: str = broker.config.broker_name
        ) -> None:
            header = PullMessageRequestHeader.from_ext_fields(request.ext_fields)
            if header.consumer_group != group or header.topic != TOPIC:
                return
            if response is not None and response.code == ResponseCode.NO_PERMISSION:
                refused.append((time.monotonic(), name, header.queue_id, response.remark or ""))

        tap(broker, RequestCode.PULL_MESSAGE, seen)
    return refused


async def set_group(cluster: LocalCluster, group: str, **settings: bool) -> None:
    async with AdminClient(cluster.namesrv_addr) as admin:
        await admin.update_subscription_group(SubscriptionGroupConfigBody(group_name=group, **settings))


def per_queue(refused: list[tuple[float, str, int, str]]) -> dict[tuple[str, int], list[float]]:
    """When each queue's pulls were refused."""
    times: dict[tuple[str, int], list[float]] = {}
    for at, broker, queue_id, _ in refused:
        times.setdefault((broker, queue_id), []).append(at)
    return times


def retried_everywhere(refused: list[tuple[float, str, int, str]]) -> bool:
    """Every queue was refused and retried at least twice."""
    times = per_queue(refused)
    return len(times) == QUEUES and all(len(at) >= 3 for at in times.values())


def assert_backed_off(refused: list[tuple[float, str, int, str]], since: float) -> None:
    """Each queue was retried at most once per RETRY_DELAY_S (plus its first try) since ``since``. The
    consumer's wait is a lower bound: a slow machine spaces the retries further apart, never closer."""
    window_s = time.monotonic() - since
    times = per_queue(list(refused))
    assert len(times) == QUEUES
    for at in times.values():
        assert len(at) <= window_s / RETRY_DELAY_S + 2, at
        gaps = [later - earlier for earlier, later in itertools.pairwise(at)]
        assert all(gap >= RETRY_DELAY_S * 0.8 for gap in gaps), gaps


async def test_a_group_that_may_not_consume_is_refused_until_enabled(cluster: LocalCluster) -> None:
    await set_group(cluster, "Off", consume_enable=False)
    refused = refusals(cluster, "Off")
    got: list[bytes] = []
    consumer = opened(
        PushConsumer(
            consumer_config(cluster, "Off", pull_time_delay_when_exception_s=RETRY_DELAY_S),
            lambda messages: got.extend(m.body for m in messages),
        )
    )
    consumer.subscribe(TOPIC)
    since = time.monotonic()
    await consumer.start()
    bodies = await send(cluster, 16)
    await eventually(lambda: retried_everywhere(refused))
    assert got == []  # every pull was refused
    assert refused and {remark for *_, remark in refused} == {"subscription group no permission, Off"}
    assert_backed_off(refused, since)

    await set_group(cluster, "Off", consume_enable=True)
    await eventually(lambda: sorted(got) == sorted(bodies))
    await consumer.aclose()


async def test_broadcasting_is_refused_when_the_group_disables_it(cluster: LocalCluster, tmp_path: Path) -> None:
    await set_group(cluster, "NoBroadcast", consume_broadcast_enable=False)
    refused = refusals(cluster, "NoBroadcast")
    got: list[bytes] = []
    config = consumer_config(
        cluster,
        "NoBroadcast",
        message_model=MessageModel.BROADCASTING,
        offset_store_dir=tmp_path / "offsets",
        pull_time_delay_when_exception_s=RETRY_DELAY_S,
    )
    broadcasting = opened(PushConsumer(config, lambda messages: got.extend(m.body for m in messages)))
    broadcasting.subscribe(TOPIC)
    since = time.monotonic()
    await broadcasting.start()
    bodies = await send(cluster, 16)
    await eventually(lambda: retried_everywhere(refused))
    assert got == []  # every pull was refused
    assert refused and {remark for *_, remark in refused} == {
        "the consumer group[NoBroadcast] can not consume by broadcast way"
    }
    assert_backed_off(refused, since)

    await set_group(cluster, "NoBroadcast", consume_broadcast_enable=True)
    await eventually(lambda: sorted(got) == sorted(bodies))
    await broadcasting.aclose()


async def test_clustering_members_of_a_group_without_broadcast_consume(cluster: LocalCluster) -> None:
    await set_group(cluster, "Clustered", consume_broadcast_enable=False)
    got: list[MessageExt] = []
    consumer = opened(PushConsumer(consumer_config(cluster, "Clustered"), got.extend))
    consumer.subscribe(TOPIC)
    await consumer.start()
    bodies = await send(cluster, 16)
    await eventually(lambda: sorted(m.body for m in got) == sorted(bodies), timeout_s=5)
    await consumer.aclose()
