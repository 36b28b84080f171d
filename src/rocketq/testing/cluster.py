"""LocalCluster: NameServer(s) and Broker(s) in this process, on loopback ports chosen by the OS.

async with LocalCluster(tmp_path, brokers=2) as cluster:
    async with Producer(group="g", namesrv_addr=cluster.namesrv_addr) as producer: ...

``clock`` is the brokers' (``FakeClock`` drives their transaction check-back in tests).
``start_slave(index)`` starts a SLAVE of broker ``index`` (``slaves``), replicating its CommitLog.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from rocketq.broker.config import BrokerConfig, BrokerRole
from rocketq.broker.server import Broker
from rocketq.client.sync import LoopThread
from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.server import NameServer
from rocketq.remoting.clock import SYSTEM_CLOCK, Clock

T = TypeVar("T")
log = logging.getLogger(__name__)


class LocalCluster:
    def __init__(
        self,
        root: Path,
        *,
        brokers: int = 1,
        name_servers: int = 1,
        cluster_name: str = "DefaultCluster",
        clock: Clock = SYSTEM_CLOCK,
        **broker_overrides: Any,
    ) -> None:
        """``clock``: the brokers' wall clock (``Broker``), for tests of time-dependent behaviour;
        ``broker_overrides``: ``BrokerConfig`` fields for every broker."""
        self.root = root
        self.clock = clock
        self.broker_count = brokers
        self.namesrv_count = name_servers
        self.cluster_name = cluster_name
        self.broker_overrides = broker_overrides
        self.name_servers: list[NameServer] = []
        self.brokers: list[Broker] = []
        self.slaves: list[Broker] = []

    @property
    def namesrv_addr(self) -> str:
        return ";".join(server.address for server in self.name_servers)

    def broker_config(self, index: int) -> BrokerConfig:
        settings: dict[str, Any] = {
            "broker_cluster_name": self.cluster_name,
            "broker_name": f"broker-{chr(ord('a') + index)}",
            "namesrv_addr": self.namesrv_addr,
            "listen_host": "127.0.0.1",
            "listen_port": 0,
            "broker_ip1": "127.0.0.1",
            "store_path_root_dir": self.root / f"broker-{index}",
            "mapped_file_size_commit_log": 16 * 1024 * 1024,
            "mapped_file_size_consume_queue": 20 * 10_000,
            "max_hash_slot_num": 10_000,
            "max_index_num": 40_000,
        }
        settings.update(self.broker_overrides)
        return BrokerConfig(**settings)

    async def start(self) -> LocalCluster:
        """Start the NameServers, then the brokers; when one fails to start, what started is stopped."""
        try:
            for _ in range(self.namesrv_count):
                server = NameServer(NamesrvConfig(listen_host="127.0.0.1", listen_port=0))
                self.name_servers.append(server)
                await server.start()
            for index in range(self.broker_count):
                await self.start_broker(index)
        except BaseException:
            await self.aclose()
            raise
        return self

    async def start_broker(self, index: int, **overrides: Any) -> Broker:
        config = dataclasses.replace(self.broker_config(index), **overrides)
        broker = Broker(config, clock=self.clock)
        await broker.start()
        if index < len(self.brokers):
            self.brokers[index] = broker
        else:
            self.brokers.append(broker)
        return broker

    async def start_slave(self, index: int, broker_id: int = 1, **overrides: Any) -> Broker:
        """Start (or restart, on the same store) slave ``broker_id`` of broker ``index``: it learns its
        master's HA address from the NameServer as it registers. ``overrides``: its BrokerConfig fields."""
        config = slave_config(self.broker_config(index), self.root / f"broker-{index}-slave-{broker_id}", broker_id)
        broker = Broker(dataclasses.replace(config, **overrides), clock=self.clock)
        await broker.start()
        self.slaves.append(broker)
        return broker

    async def stop_slave(self, slave: Broker) -> None:
        """Stop a slave started by ``start_slave`` (its store stays for a restart)."""
        self.slaves.remove(slave)
        await slave.aclose()

    async def wait_dispatched(self, timeout_s: float = 5.0) -> None:
        """Wait until every broker has indexed everything it stored (pulls then see all of it)."""
        async with asyncio.timeout(timeout_s):
            for broker in self.brokers:
                await wait_dispatched(broker)

    async def aclose(self) -> None:
        """Stop every broker (each closes its store even when a step before fails), then the NameServers."""
        for brokers in (self.slaves, self.brokers):
            results = await asyncio.gather(*(broker.aclose() for broker in brokers), return_exceptions=True)
            for broker, result in zip(brokers, results, strict=True):
                if isinstance(result, BaseException):
                    log.error("broker %s did not stop cleanly", broker.config.broker_name, exc_info=result)
        for server in self.name_servers:
            await server.aclose()

    async def __aenter__(self) -> LocalCluster:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def slave_config(master: BrokerConfig, store: Path, broker_id: int = 1) -> BrokerConfig:
    """A SLAVE of the broker configured by ``master``: same cluster, name and file sizes, its own store."""
    return dataclasses.replace(
        master,
        broker_role=BrokerRole.SLAVE,
        broker_id=broker_id,
        store_path_root_dir=store,
        listen_port=0,
        ha_listen_port=-1,
        ha_master_address="",
    )


async def wait_replicated(master_offset: int, slave: Broker) -> None:
    """Wait until ``slave`` has the CommitLog up to ``master_offset`` and has dispatched it."""
    store = slave.store
    while store.commit_log.max_offset < master_offset or store.dispatcher.dispatched_offset < master_offset:
        await asyncio.sleep(0.002)


async def wait_dispatched(broker: Broker) -> None:
    """Wait until ``broker``'s dispatcher has caught up with its CommitLog."""
    store = broker.store
    while store.dispatcher.dispatched_offset < store.commit_log.max_offset:
        await asyncio.sleep(0.002)


class ThreadedCluster:
    """A LocalCluster on its own event-loop thread, for synchronous code and tests:

    with ThreadedCluster(tmp_path) as cluster:
        SyncProducer(group="g", namesrv_addr=cluster.namesrv_addr) ...
    """

    def __init__(self, root: Path, **options: Any) -> None:
        self._loop = LoopThread(name="rocketq-cluster")
        self.cluster = LocalCluster(root, **options)

    @property
    def namesrv_addr(self) -> str:
        return self.cluster.namesrv_addr

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the cluster's loop (to reach its brokers)."""
        return self._loop.call(coroutine)

    def __enter__(self) -> ThreadedCluster:
        try:
            self._loop.call(self.cluster.start())
        except BaseException:
            self._loop.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._loop.call(self.cluster.aclose())
        finally:
            self._loop.stop()
