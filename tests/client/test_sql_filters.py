"""SQL92 subscriptions from the consumers: each group gets exactly its matches; bad expressions and
brokers that cannot filter are clear errors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.client import Message, MessageSelector, MQClientError, Producer, PullConsumer, PushConsumer
from rocketq.client.admin import AdminClient
from rocketq.filter import FilterExpressionError
from rocketq.testing import LocalCluster, eventually

from .helpers import close_opened, consumer_config, opened

TOPIC = "Prices"


@pytest.fixture
async def sql_cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(tmp_path, brokers=2, enable_property_filter=True) as running:
        async with AdminClient(running.namesrv_addr) as admin:
            await admin.update_topic(TOPIC, cluster="DefaultCluster", read_queues=2, write_queues=2)
        try:
            yield running
        finally:
            await close_opened()


async def send_prices(cluster: LocalCluster, count: int) -> None:
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        for i in range(count):
            tag = ("x", "y", "z")[i % 3]
            properties = {"price": str(i)} if i % 5 else {}  # every fifth has no price: NULL
            await producer.send(Message(TOPIC, f"m{i}".encode(), tags=tag, properties=properties))


def wanted(count: int, keep: object) -> list[bytes]:
    return [f"m{i}".encode() for i in range(count) if keep(i)]  # type: ignore[operator]


async def test_two_groups_with_different_expressions_each_get_exactly_their_matches(sql_cluster: LocalCluster) -> None:
    got_push: list[bytes] = []
    push = opened(PushConsumer(consumer_config(sql_cluster, "CHEAP"), lambda ms: got_push.extend(m.body for m in ms)))
    push.subscribe(TOPIC, MessageSelector.by_sql("price < 30 AND TAGS IN ('x', 'y')"))
    await push.start()
    pull = opened(PullConsumer(consumer_config(sql_cluster, "DEAR")))
    pull.subscribe(TOPIC, MessageSelector.by_sql("price >= 50 OR price IS NULL"))
    await pull.start()
    await send_prices(sql_cluster, 90)

    cheap = wanted(90, lambda i: i % 5 and i < 30 and i % 3 != 2)
    dear = wanted(90, lambda i: not i % 5 or i >= 50)
    got_pull: list[bytes] = []
    while len(got_pull) < len(dear):
        batch = await pull.poll(10.0)
        assert batch, f"the pull consumer stopped at {len(got_pull)} of {len(dear)}"
        got_pull.extend(m.body for m in batch)
    await eventually(lambda: len(got_push) >= len(cheap))
    got_pull.extend(m.body for m in await pull.poll(0.5))
    assert sorted(got_push) == sorted(cheap)
    assert sorted(got_pull) == sorted(dear)
    for broker in sql_cluster.brokers:  # the brokers registered both subscriptions
        assert {d.consumer_group for d in broker.filters.of_topic(TOPIC)} == {"CHEAP", "DEAR"}
    await push.aclose()
    await pull.aclose()


def test_a_malformed_expression_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(FilterExpressionError, match="'x' at column 7 after a complete expression"):
        MessageSelector.by_sql("a = 1 x")
    with pytest.raises(ValueError, match="cannot be compared"):
        MessageSelector.by_sql("price > 'cheap'")


async def test_a_broker_that_cannot_filter_by_sql_is_a_clear_error_at_start(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path, brokers=1) as cluster:  # enablePropertyFilter=false
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.update_topic(TOPIC, cluster="DefaultCluster", read_queues=1, write_queues=1)
        consumer = PushConsumer(consumer_config(cluster, "NOSQL"), lambda ms: None)
        consumer.subscribe(TOPIC, MessageSelector.by_sql("price > 1"))
        with pytest.raises(MQClientError, match=r"refuses the SQL92 subscription.*enablePropertyFilter=false"):
            await consumer.start()
        pull = PullConsumer(consumer_config(cluster, "NOSQL2"))
        pull.subscribe(TOPIC, MessageSelector.by_sql("price > 1"))
        with pytest.raises(MQClientError, match="enablePropertyFilter=false"):
            await pull.start()
        by_tag = PushConsumer(consumer_config(cluster, "NOSQL"), lambda ms: None)
        by_tag.subscribe(TOPIC, "*")  # by tag it starts fine
        await by_tag.start()
        await by_tag.aclose()
