"""What a broker is made of, and its upkeep: ``BrokerParts`` is the base class of
``rocketq.broker.broker_roles.BrokerRoles`` (master and slave roles, failover's changes of role), itself the
base of ``rocketq.broker.server.Broker`` (start and stop).

Here: the store and the metadata managers made from the config, the views of a running broker (its port,
address, handlers, connections, replication state), and its background tasks: spawning them, running an
action every interval, and the periodic upkeep (persisting offsets and filter data, dropping client channels
without heartbeats, sampling rates, reloading the ACL file).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from rocketq.broker import consume_rates
from rocketq.broker.acl import BrokerAcl
from rocketq.broker.client_manager import ClientManager
from rocketq.broker.config import BrokerConfig, BrokerRole
from rocketq.broker.consumer_filters import ConsumerFilterManager
from rocketq.broker.consumer_offsets import ConsumerOffsetManager
from rocketq.broker.context import BrokerContext
from rocketq.broker.handlers.clients import notify_group_changed
from rocketq.broker.registration import Registrar
from rocketq.broker.runtime_info import sample_runtime
from rocketq.broker.runtime_stats import SAMPLE_INTERVAL_S
from rocketq.broker.schedule import ScheduleService
from rocketq.broker.subscription_groups import SubscriptionGroupManager
from rocketq.broker.topic_config import TopicConfigManager
from rocketq.broker.transactions.checks import CheckService
from rocketq.broker.transactions.service import TransactionService
from rocketq.failover.etcd import EtcdClient
from rocketq.failover.service import FailoverService
from rocketq.metrics.broker import BrokerMetrics
from rocketq.remoting import Connection, RemotingClient, RemotingServer, ServerHandler
from rocketq.remoting.clock import SYSTEM_CLOCK, Clock
from rocketq.remoting.server import BlockingHandler
from rocketq.replication import HAMaster, HASlave, ReplicationState
from rocketq.replication.sync import SlaveSynchronize
from rocketq.store import MessageStore

log = logging.getLogger(__name__)


class BrokerParts:
    """A broker's parts and background tasks (``rocketq.broker.server.Broker`` starts and stops them)."""

    def __init__(self, config: BrokerConfig, *, clock: Clock = SYSTEM_CLOCK, config_file: Path | None = None) -> None:
        """``clock``: wall-clock time, for what depends on it (the transaction check-back, the idempotent-send
        window, filter data, the store time of each record put, so when a delayed message is due); tests
        pass a ``rocketq.testing.FakeClock``. ``config_file``: the broker.conf ``config`` was read from,
        where settings changed at run time (UPDATE_BROKER_CONFIG) are written."""
        self.own_broker_id = config.broker_id  # with failover: its number while it follows (0 while it leads)
        self.master_role = config.broker_role  # with failover: the kind of master it is while it leads
        if config.failover_enable:  # every broker of the group starts following; etcd says who leads
            config.check_failover_member()
            config = dataclasses.replace(config, broker_role=BrokerRole.SLAVE)
        self.config = config
        self.config_file = config_file
        self.clock = clock
        self.store = MessageStore(config.store_config(), wall_clock=clock.time)
        root = config.store_path_root_dir / "config"
        self.topics = TopicConfigManager(
            root / "topics.json",
            broker_name=config.broker_name,
            cluster_name=config.broker_cluster_name,
            auto_create=config.auto_create_topic_enable,
            default_queues=config.default_topic_queue_nums,
            cluster_topic=config.cluster_topic_enable,
            broker_topic=config.broker_topic_enable,
        )
        self.offsets = ConsumerOffsetManager(root / "consumerOffset.json")
        self.groups = SubscriptionGroupManager(
            root / "subscriptionGroup.json", auto_create=config.auto_create_subscription_group
        )
        self.clients = ClientManager()
        self.filters = ConsumerFilterManager(
            root / "consumerFilter.json",
            config.bloom_filter(),
            clean_after_ms=config.filter_data_clean_time_span,
            clock=clock.time,
        )
        self._tasks: list[asyncio.Task[Any]] = []
        self._server: RemotingServer | None = None
        self._client: RemotingClient | None = None
        self.context: BrokerContext | None = None
        self.consume_rates = consume_rates.ConsumeRates()
        self.registrar: Registrar | None = None
        self.schedule: ScheduleService | None = None
        self.channels_expired = 0  # client channels dropped for want of heartbeats (channelExpiredTimeout)
        self.acl: BrokerAcl | None = None  # with aclEnable: the rules in force (rocketq.broker.acl)
        self.transactions: TransactionService | None = None
        self.transaction_checks: CheckService | None = None
        self.metrics: BrokerMetrics | None = None  # with metricsExporterType=PROM (rocketq.metrics)
        self.ha_master: HAMaster | None = None  # a master's HA service (rocketq.replication)
        self.ha_slave: HASlave | None = None  # a slave's HA client
        self.slave_sync: SlaveSynchronize | None = None  # a slave's copy of its master's metadata
        self.failover: FailoverService | None = None  # with failoverEnable (rocketq.failover)
        self._etcd: EtcdClient | None = None
        self._serving = False  # started fully and not closed: what it loaded is persisted at close
        self._role_tasks: list[asyncio.Task[Any]] = []  # a master's scheduler and check-back, a slave's HA client

    @property
    def port(self) -> int:
        assert self._server is not None, "broker not started"
        return self._server.port

    @property
    def address(self) -> str:
        assert self.context is not None, "broker not started"
        return self.context.address

    @property
    def ha_address(self) -> str:
        """A master's HA service ``host:port`` as advertised ("" for a slave, or before ``start``)."""
        if self.ha_master is None or self.context is None:
            return ""
        return f"{self.config.advertised_ip}:{self.ha_master.port}"

    def replication_state(self) -> ReplicationState:
        """Where replication stands: a master's connected slaves, what they acknowledged and how far
        behind they are; a slave's master and its own log end (``rocketq.replication.ReplicationState``)."""
        if self.ha_master is not None:
            return self.ha_master.state()
        if self.ha_slave is not None:
            return self.ha_slave.state()
        end = self.store.commit_log.max_offset
        return ReplicationState(role="NONE", max_offset=end, acked_offset=0)

    @property
    def handlers(self) -> dict[int, ServerHandler | BlockingHandler]:
        """The request handlers by request code, as the server dispatches them (empty before ``start``).
        Replacing an entry changes how later requests of that code are handled (tests watch traffic so);
        a handler may answer at once, so a wrapper awaits ``awaited_answer(handler(request, connection))``."""
        return self._server.handlers if self._server is not None else {}

    @property
    def connections(self) -> frozenset[Connection]:
        """The client connections open now (empty before ``start``)."""
        return frozenset(self._server.connections) if self._server is not None else frozenset()

    # -- background tasks ------------------------------------------------------------------------------

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        task.add_done_callback(self._task_done)
        self._tasks.append(task)

    @staticmethod
    def _task_done(task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("broker background task failed", exc_info=task.exception())

    @staticmethod
    async def _every(interval_s: float, action: Any) -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                await action()
            except Exception:
                log.exception("periodic broker task failed; retrying next round")

    async def _reload_acl(self) -> None:
        if self.acl is not None:
            self.acl.reload_if_changed()

    async def _sample_runtime(self) -> None:
        """Sample the counters behind the runtime info's rates every second of the broker's clock (the
        first sample is taken by ``start``)."""
        assert self.context is not None
        while True:
            await self.clock.sleep(SAMPLE_INTERVAL_S)
            sample_runtime(self.context)

    async def _sample_consume_rates(self) -> None:
        self.consume_rates.sample(time.monotonic())

    async def _persist_offsets(self) -> None:
        await asyncio.to_thread(self.offsets.persist)
        if self.filters.clean() or self.filters.changed:
            await asyncio.to_thread(self.filters.persist)

    async def _expire_channels(self) -> None:
        timeout_s = self.config.channel_expired_timeout_ms / 1000
        for channel in self.clients.expired_channels(time.monotonic(), timeout_s):
            self.channels_expired += 1
            if isinstance(channel, Connection):
                log.info("closing client channel %s: no heartbeat for %.0fs", channel.remote_address, timeout_s)
                channel.close()
            self._forget(channel)

    def _channel_closed(self, connection: Connection) -> None:
        self._forget(connection)

    def _forget(self, channel: object) -> None:
        assert self.context is not None
        for group in self.clients.remove_channel(channel):
            log.info("group %s lost member %s", group, getattr(channel, "remote_address", channel))
            notify_group_changed(self.context, group)
            if group not in self.clients.consumers:
                self.filters.unregister(group)
