"""A broker with aclEnable=true: rocketq's own clients with credentials, refusals that change nothing,
white addresses, and the plain_acl.yml re-read when it changes."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.acl import AclConfigError
from rocketq.broker.server import Broker
from rocketq.client import (
    ClientConfig,
    ConsumeFromWhere,
    ConsumerConfig,
    Message,
    MQClientError,
    Producer,
    ProducerConfig,
    PushConsumer,
)
from rocketq.client.admin import AdminClient
from rocketq.client.errors import NoPermissionError
from rocketq.client.message import MessageExt
from rocketq.testing import LocalCluster

ACL = """
accounts:
  - accessKey: operator
    secretKey: operator-secret
    admin: true
  - accessKey: shop-app
    secretKey: shop-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: [Orders=PUB|SUB]
    groupPerms: [billing=SUB]
"""


def write_acl(path: Path, text: str) -> None:
    """Replace the file and move its modification time on (a file system may keep coarse times)."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    os.utime(path, ns=(before + 1_000_000_000, before + 1_000_000_000))


def client(cluster: LocalCluster, access_key: str = "", secret_key: str = "") -> ClientConfig:
    return ClientConfig(namesrv_addr=cluster.namesrv_addr, access_key=access_key, secret_key=secret_key)


def producer(cluster: LocalCluster, access_key: str = "", secret_key: str = "") -> Producer:
    return Producer(ProducerConfig(group="shop-producer", client=client(cluster, access_key, secret_key)))


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    acl_file = tmp_path / "plain_acl.yml"
    write_acl(acl_file, ACL)
    async with LocalCluster(tmp_path / "cluster", brokers=1, acl_enable=True, acl_file=acl_file) as running:
        async with AdminClient(running.namesrv_addr, access_key="operator", secret_key="operator-secret") as admin:
            await admin.update_topic("Orders", cluster="DefaultCluster", read_queues=2, write_queues=2)
            await admin.update_topic("Payroll", cluster="DefaultCluster", read_queues=2, write_queues=2)
        yield running


async def test_producer_consumer_and_admin_with_credentials(cluster: LocalCluster) -> None:
    async with producer(cluster, "shop-app", "shop-secret") as shop:
        for i in range(5):
            await shop.send(Message("Orders", f"order-{i}".encode(), keys=f"k{i}"))
    received: list[MessageExt] = []
    config = ConsumerConfig(
        group="billing",
        client=client(cluster, "shop-app", "shop-secret"),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        persist_consumer_offset_interval_s=0.2,
    )
    consumer = PushConsumer(config, received.extend)
    consumer.subscribe("Orders")
    await consumer.start()
    try:
        async with asyncio.timeout(30):
            while len(received) < 5:
                await asyncio.sleep(0.05)
    finally:
        await consumer.aclose()
    assert sorted(m.body for m in received) == [f"order-{i}".encode() for i in range(5)]
    broker = cluster.brokers[0]
    assert sum(broker.offsets.offsets_of("billing", "Orders").values()) == 5  # offsets committed, signed
    async with AdminClient(cluster.namesrv_addr, access_key="shop-app", secret_key="shop-secret") as reader:
        progress = await reader.consumer_progress("billing", "Orders")  # needs any valid account
        assert sum(row.consumer_offset for row in progress) == 5
        found = await reader.query_by_key("Orders", "k3")  # QUERY_MESSAGE: SUB on the topic
        assert [m.body for m in found] == [b"order-3"]
    assert broker.acl is not None and broker.acl.refused == 0


async def test_unsigned_wrong_secret_and_missing_permission_are_refused(cluster: LocalCluster) -> None:
    store = cluster.brokers[0].store
    written = store.commit_log.max_offset
    cases = [
        (producer(cluster), "Orders", "needs an AccessKey and a Signature"),
        (producer(cluster, "shop-app", "not-the-secret"), "Orders", "does not match AccessKey 'shop-app'"),
        (producer(cluster, "shop-app", "shop-secret"), "Payroll", "no PUB permission on topic:Payroll"),
    ]
    for client_producer, topic, expected in cases:
        async with client_producer as refused:
            with pytest.raises(MQClientError, match=f"NO_PERMISSION \\(16\\): .*{expected}"):
                await refused.send(Message(topic, b"sneaky"))  # (retried, as RocketMQ's producers do)
    assert store.commit_log.max_offset == written  # nothing was stored


async def test_anonymous_and_non_admin_admin_commands_change_nothing(cluster: LocalCluster) -> None:
    broker = cluster.brokers[0]
    for keys in ({}, {"access_key": "shop-app", "secret_key": "shop-secret"}):
        async with AdminClient(cluster.namesrv_addr, **keys) as admin:
            with pytest.raises(NoPermissionError, match="DELETE_TOPIC_IN_BROKER"):
                await admin.delete_topic("Orders")
            with pytest.raises(NoPermissionError, match="UPDATE_AND_CREATE_TOPIC"):
                await admin.update_topic("Sneaky", cluster="DefaultCluster")
            with pytest.raises(NoPermissionError, match="INVOKE_BROKER_TO_RESET_OFFSET"):
                await admin.reset_offset_by_time("billing", "Orders", 0)
            # the NameServer does no ACL (nor does RocketMQ's): reading routes needs no account
            route = await admin.topic_route("Orders")  # still routed: the broker refused first
            assert route.broker_datas
    assert broker.topics.get("Orders") is not None and broker.topics.get("Sneaky") is None
    async with AdminClient(cluster.namesrv_addr, access_key="operator", secret_key="operator-secret") as operator:
        await operator.delete_topic("Payroll")
        with pytest.raises(MQClientError, match="no route"):
            await operator.topic_route("Payroll")
    assert broker.topics.get("Payroll") is None


async def test_white_addresses_pass_without_a_signature(cluster: LocalCluster, tmp_path: Path) -> None:
    broker = cluster.brokers[0]
    assert broker.acl is not None
    acl_file = broker.acl.path
    write_acl(
        acl_file,
        ACL.replace("    defaultTopicPerm: DENY", "    whiteRemoteAddress: 127.0.0.*\n    defaultTopicPerm: DENY"),
    )
    assert broker.acl.reload_if_changed()
    async with producer(cluster, "shop-app", "a-wrong-secret") as from_loopback:  # signature not checked
        await from_loopback.send(Message("Orders", b"white"))
        with pytest.raises(MQClientError, match="topic:Payroll"):  # permissions still are
            await from_loopback.send(Message("Payroll", b"white"))
    write_acl(acl_file, "globalWhiteRemoteAddresses: ['127.0.0.1']\n" + ACL)
    assert broker.acl.reload_if_changed()
    async with producer(cluster) as anonymous:
        await anonymous.send(Message("Payroll", b"from a global white address: anything goes"))


async def test_the_file_is_re_read_when_it_changes_and_a_bad_one_keeps_the_rules(
    cluster: LocalCluster, caplog: pytest.LogCaptureFixture
) -> None:
    broker = cluster.brokers[0]
    assert broker.acl is not None
    assert not broker.acl.reload_if_changed()  # unchanged: not read again
    async with producer(cluster, "shop-app", "shop-secret") as shop:
        with pytest.raises(MQClientError, match="NO_PERMISSION"):
            await shop.send(Message("Payroll", b"not yet"))
        write_acl(broker.acl.path, ACL.replace("Orders=PUB|SUB", "Orders=PUB|SUB, Payroll=PUB"))
        assert broker.acl.reload_if_changed()
        await shop.send(Message("Payroll", b"now allowed"))
        with caplog.at_level(logging.WARNING, logger="rocketq.broker.acl"):
            write_acl(broker.acl.path, ACL.replace("PUB|SUB", "PUBSUB"))
            assert not broker.acl.reload_if_changed()
        assert "cannot be used, keeping the rules read before" in caplog.text and "'PUBSUB'" in caplog.text
        await shop.send(Message("Payroll", b"the old rules are still in force"))
        broker.acl.path.unlink()
        assert not broker.acl.reload_if_changed()
        await shop.send(Message("Payroll", b"a vanished file keeps them too"))


async def test_a_broker_without_its_acl_file_does_not_start(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path, brokers=0) as cluster:
        config = cluster.broker_config(0)
        for acl_file in (tmp_path / "missing.yml", None):
            broker = Broker(dataclasses.replace(config, acl_enable=True, acl_file=acl_file))
            with pytest.raises(AclConfigError, match=r"aclFile|does not exist"):
                await broker.start()
            await broker.aclose()
