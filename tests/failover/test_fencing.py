"""A master that can no longer renew its etcd lease stops taking writes before etcd could let another
broker lead, and steps down; a group's only broker leads, and a stopped master hands over at once."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.broker.config import BrokerRole
from rocketq.broker.server import Broker
from rocketq.client import Message, Producer, SendStatus
from rocketq.failover.service import Role
from rocketq.testing import LocalCluster, eventually
from rocketq.testing.etcd import EtcdServer

from .test_failover import send_raw


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(tmp_path, brokers=0) as running:
        yield running


def member(cluster: LocalCluster, etcd: EtcdServer, broker_id: int) -> Broker:
    config = dataclasses.replace(
        cluster.broker_config(0),
        store_path_root_dir=cluster.root / f"member-{broker_id}",
        broker_id=broker_id,
        broker_role=BrokerRole.ASYNC_MASTER,
        failover_enable=True,
        failover_etcd_endpoints=etcd.endpoint,
        failover_lease_ttl=2,
        failover_check_interval=100,
    )
    return Broker(config)


async def test_a_master_cut_off_from_etcd_stops_writing(cluster: LocalCluster, etcd: EtcdServer) -> None:
    broker = await member(cluster, etcd, 1).start()
    try:
        assert broker.failover is not None
        await eventually(lambda: broker.failover is not None and broker.failover.role is Role.MASTER, 20)
        assert broker.config.broker_id == 0  # it registers as the group's master
        assert broker.store.epochs.last_epoch == broker.failover.epoch == 1
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            assert (await producer.send(Message("Orders", b"x"))).status is SendStatus.SEND_OK
        etcd.stop()
        await eventually(lambda: broker.failover is not None and not broker.failover.may_write(), 10)
        assert await send_raw(broker.address) == 14  # SERVICE_NOT_AVAILABLE
        await eventually(lambda: broker.failover is not None and broker.failover.role is Role.FOLLOWER, 10)
        assert broker.config.is_slave and broker.config.broker_id == 1
        assert broker.ha_master is None
    finally:
        await broker.aclose()


async def test_a_stopped_master_hands_its_group_over_at_once(cluster: LocalCluster, etcd: EtcdServer) -> None:
    first = await member(cluster, etcd, 1).start()
    second = await member(cluster, etcd, 2).start()
    try:
        await eventually(lambda: first.failover is not None and first.failover.role is Role.MASTER, 20)
        await eventually(lambda: second.replication_state().connected, 20, what="the second follows the first")
        await first.aclose()  # (its lease is revoked: no TTL to wait for)
        await eventually(lambda: second.failover is not None and second.failover.role is Role.MASTER, 5)
        assert second.failover is not None and second.failover.epoch == 2
        assert second.store.epochs.last_epoch == 2
    finally:
        await second.aclose()
        await first.aclose()
