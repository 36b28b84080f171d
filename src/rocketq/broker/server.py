"""Broker: wires the store, the managers, the remoting server and the background tasks, and runs them."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from rocketq.acl import AclConfigError
from rocketq.broker import consume_rates
from rocketq.broker.acl import BrokerAcl
from rocketq.broker.client_manager import ClientManager
from rocketq.broker.config import BrokerConfig, BrokerRole
from rocketq.broker.consumer_filters import ConsumerFilterManager
from rocketq.broker.consumer_offsets import ConsumerOffsetManager
from rocketq.broker.context import BrokerContext
from rocketq.broker.filter_bit_maps import FilterBitMaps
from rocketq.broker.grouped_puts import GroupedPuts
from rocketq.broker.ha_parts import new_ha_slave, start_ha_master
from rocketq.broker.handlers import handler_table
from rocketq.broker.handlers.clients import notify_group_changed
from rocketq.broker.idempotent_sends import IdempotentSends
from rocketq.broker.long_polling import LongPolling
from rocketq.broker.loop_dispatch import FlushWaits, LoopDispatch
from rocketq.broker.rebalance_locks import RebalanceLockTable
from rocketq.broker.registration import Registrar
from rocketq.broker.retention_guard import UnconsumedGuard
from rocketq.broker.runtime_info import sample_runtime
from rocketq.broker.runtime_stats import SAMPLE_INTERVAL_S
from rocketq.broker.schedule import ScheduleService
from rocketq.broker.subscription_groups import SubscriptionGroupManager
from rocketq.broker.topic_config import TopicConfigManager
from rocketq.broker.transactions.checks import CheckService
from rocketq.broker.transactions.service import TransactionService
from rocketq.failover.etcd import EtcdClient
from rocketq.failover.service import FailoverService, failover_settings
from rocketq.metrics.broker import BrokerMetrics
from rocketq.metrics.exporter import exporter_enabled
from rocketq.remoting import Connection, RemotingClient, RemotingServer, ServerHandler
from rocketq.remoting.address import listens_beyond_loopback
from rocketq.remoting.clock import SYSTEM_CLOCK, Clock
from rocketq.remoting.server import BlockingHandler
from rocketq.remoting.tasks import cancel_and_wait
from rocketq.replication import HAMaster, HASlave, ReplicationState
from rocketq.replication.sync import SlaveSynchronize
from rocketq.store import MessageStore

log = logging.getLogger(__name__)


class Broker:
    """``async with Broker(config) as broker:`` starts it; ``aclose()`` stops it gracefully: stop
    accepting, answer held pulls, finish in-flight requests, persist offsets, close the store.
    ``clock`` drives the transaction check-back (tests give a ``rocketq.testing.FakeClock``)."""

    def __init__(self, config: BrokerConfig, *, clock: Clock = SYSTEM_CLOCK, config_file: Path | None = None) -> None:
        """``clock``: wall-clock time, for what depends on it (the transaction check-back, the idempotent-send
        window, filter data); tests pass a ``rocketq.testing.FakeClock``. ``config_file``: the broker.conf
        ``config`` was read from, where settings changed at run time (UPDATE_BROKER_CONFIG) are written."""
        self.own_broker_id = config.broker_id  # with failover: its number while it follows (0 while it leads)
        self.master_role = config.broker_role  # with failover: the kind of master it is while it leads
        if config.failover_enable:  # every broker of the group starts following; etcd says who leads
            config.check_failover_member()
            config = dataclasses.replace(config, broker_role=BrokerRole.SLAVE)
        self.config = config
        self.config_file = config_file
        self.clock = clock
        self.store = MessageStore(config.store_config())
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

    async def start(self) -> Broker:
        """Start every part; a start that fails part way stops what it started (``aclose``) and raises."""
        failure: BaseException | None = None
        try:  # (no await in the handler: compiled, an await there let another task's exception escape)
            return await self._start()
        except BaseException as error:
            failure = error
        await self.aclose()
        raise failure

    async def _start(self) -> Broker:
        config = self.config
        if exporter_enabled(config.metrics_exporter_type):  # (an unknown type stops the start)
            self.metrics = BrokerMetrics(self)
        if config.acl_enable:  # a missing or bad file stops the start before anything else
            if config.acl_file is None:
                raise AclConfigError("aclEnable=true needs aclFile: the plain_acl.yml to read accounts from")
            self.acl = await asyncio.to_thread(BrokerAcl.load, config.acl_file)
        await asyncio.to_thread(self.store.start)
        self.topics.load()
        self.offsets.load()
        self.groups.load()
        self.filters.load(self.store.commit_log.max_offset)
        if config.enable_calc_filter_bit_map:
            if not config.enable_consume_queue_ext:
                log.warning("enableCalcFilterBitMap needs enableConsumeQueueExt to store the bit maps: none are kept")
            self.store.set_bit_map_calculator(FilterBitMaps(self.filters))
        loop = asyncio.get_running_loop()
        long_polling = LongPolling(loop, self.store.get_max_offset_in_queue)
        if config.is_slave:
            self.ha_slave = self._new_ha_slave()
        else:
            self.ha_master = await self._start_ha_master()
            self.store.epochs.begin(self.store.epochs.last_epoch + 1, self.store.start_writing())
        dispatch, flush_waits = LoopDispatch(self.store, loop), FlushWaits(self.store, self._replicas())
        self._client = RemotingClient()
        self.context = BrokerContext(
            config=config,
            store=self.store,
            topics=self.topics,
            offsets=self.offsets,
            groups=self.groups,
            clients=self.clients,
            long_polling=long_polling,
            dispatch=dispatch,
            flush_waits=flush_waits,
            grouped_puts=GroupedPuts(self.store, dispatch, flush_waits),
            locks=RebalanceLockTable(config.rebalance_lock_max_live_time_ms),
            filters=self.filters,
            address="",
            consume_rates=self.consume_rates,
            clock=self.clock,
            boot_ms=int(self.clock.time() * 1000),
            config_file=self.config_file,
            idempotent_sends=IdempotentSends(
                self.store,
                window_ms=config.idempotent_send_window_ms,
                max_entries=config.idempotent_send_max_entries,
                clock=self.clock.time,
            ),
        )
        self.context.replication_state = self.replication_state
        self._offer_slaves()
        self.transactions = self.context.transactions = TransactionService(self.context, self.clock)
        await self.transactions.load()
        self.transaction_checks = CheckService(self.transactions, self.context)
        handlers = handler_table(self.context)
        self._server = RemotingServer(
            handlers,
            host=config.listen_host,
            port=config.listen_port,
            limits=config.server_limits(),
            on_close=self._channel_closed,
            guard=None if self.acl is None else self.acl.check,
            observer=None if self.metrics is None else self.metrics.rpc_latency.observe_answer,
        )
        await self._server.start()
        if self.acl is None and listens_beyond_loopback(config.listen_host):
            log.warning(
                "broker %s listens on %s:%d without ACL: anyone who can reach this port can create and delete"
                " topics and groups, reset offsets and read every message. Set aclEnable=true with a"
                " plain_acl.yml, or listenHost=127.0.0.1 (docs/acl.md).",
                config.broker_name,
                config.listen_host,
                self._server.port,
            )
        self.context.advertise(f"{config.advertised_ip}:{self._server.port}")
        if self.metrics is not None:
            await self.metrics.start()
        self.store.add_arrival_listener(long_polling.on_arrival)
        sample_runtime(self.context)  # the rates' first sample, as of the start
        self.schedule = ScheduleService(self.context)
        self.schedule.load()
        schedule = self.schedule
        self.context.delay_offsets = lambda: dict(schedule.offsets)
        slave = self.ha_slave
        if slave is not None:
            self.slave_sync = self._new_slave_sync()
        self.registrar = Registrar(self.context, self._client, ha_address=self.ha_address, on_master=self._on_master)
        self.context.request_registration = self.registrar.trigger
        self.context.register_now = self.registrar.register_all
        self.store.set_unconsumed_guard(
            UnconsumedGuard(self.store, self.offsets, self.clients, lambda: dict(schedule.offsets))
        )
        # Registered before start returns, when the NameServers answer: a client started right after
        # (``rocketq up``, then a send) finds the broker's routes. The loop below retries when they did not.
        self._spawn(self.registrar.run(registered=await self.registrar.register_all()))
        self._spawn(self._every(config.flush_consumer_offset_interval_ms / 1000, self._persist_offsets))
        self._spawn(self._every(config.client_channel_scan_interval_ms / 1000, self._expire_channels))
        self._start_role_tasks()
        if config.failover_enable:
            self._etcd = EtcdClient(config.failover_endpoints)
            self.failover = FailoverService(
                self, self._etcd, failover_settings(config, self.own_broker_id), clock=self.clock
            )
            self.context.write_fence = self.failover.may_write
            self._spawn(self.failover.run())
        self.consume_rates.sample(time.monotonic())
        self._spawn(self._every(consume_rates.SAMPLE_INTERVAL_S, self._sample_consume_rates))
        self._spawn(self._sample_runtime())
        if self.acl is not None:
            self._spawn(self._every(config.acl_file_check_interval_ms / 1000, self._reload_acl))
        await asyncio.sleep(0)  # the services spawned above reach their first wait (their timers are armed)
        self._serving = True
        log.info(
            "broker %s (cluster %s) serving at %s, store %s",
            config.broker_name,
            config.broker_cluster_name,
            self.context.address,
            config.store_path_root_dir,
        )
        return self

    def _on_master(self, ha_address: str, broker_address: str) -> None:
        """A slave's registration named its master: follow it (unless ``haMasterAddress`` says where, or
        failover does: etcd, not the NameServer, says who leads then)."""
        if self.failover is not None or self.config.failover_enable:
            return
        if self.ha_slave is not None and not self.config.ha_master_address:
            self.ha_slave.set_master(ha_address, broker_address or None)
        if self.slave_sync is not None and broker_address:
            self.slave_sync.master_address = broker_address

    # -- roles ----------------------------------------------------------------------------------------

    def _new_ha_slave(self) -> HASlave:
        return new_ha_slave(self.config, self.store, self.clock, lambda: self._client)

    def _new_slave_sync(self) -> SlaveSynchronize:
        assert self._client is not None
        return SlaveSynchronize(
            self._client,
            topics=self.topics,
            offsets=self.offsets,
            groups=self.groups,
            set_delay_offsets=self._take_delay_offsets,
            clock=self.clock,
        )

    async def _start_ha_master(self) -> HAMaster:
        return await start_ha_master(self.config, self.store, self.clock)

    def _replicas(self) -> HAMaster | None:
        """What a put waits for besides its fsync: a SYNC_MASTER's slaves."""
        return self.ha_master if self.config.broker_role is BrokerRole.SYNC_MASTER else None

    def _offer_slaves(self) -> None:
        """Tell the pull path whether a slave can take this master's readers."""
        assert self.context is not None
        ha_master, commit_log = self.ha_master, self.store.commit_log
        if ha_master is None:
            self.context.slave_available = lambda: False
        else:
            self.context.slave_available = lambda: ha_master.available(commit_log.max_offset)

    def _start_role_tasks(self) -> None:
        """A master runs the delay scheduler and the transaction check-back; a slave (whose store is
        written by its master only) follows its master and copies its metadata."""
        assert self.schedule is not None and self.transaction_checks is not None
        loop = asyncio.get_running_loop()
        if self.ha_slave is None:
            work = [self.schedule.run(), self.transaction_checks.run()]
        else:
            assert self.slave_sync is not None
            work = [self.ha_slave.run(), self.slave_sync.run()]
        for coroutine in work:
            task = loop.create_task(coroutine)
            task.add_done_callback(self._task_done)
            self._role_tasks.append(task)

    async def _stop_role_tasks(self) -> None:
        await cancel_and_wait(self._role_tasks, ignore_errors=True)
        self._role_tasks.clear()

    def failover_report(self) -> tuple[int, int, str]:
        """For failover: the last epoch in this broker's log, where the log ends, its address."""
        return self.store.epochs.last_epoch, self.store.commit_log.max_offset, self.address

    async def become_master(self, epoch: int) -> str:
        """Failover made this broker its group's master in ``epoch``: stop following, start ``epoch`` at
        the end of the log, take writes (as brokerId 0, ``master_role``), serve slaves. Returns the HA
        address its slaves connect to."""
        assert self.context is not None and self.registrar is not None
        await self._stop_role_tasks()
        self.ha_slave = self.slave_sync = None
        self.store.epochs.begin(epoch, self.store.start_writing())
        self.config = self.context.config = dataclasses.replace(self.config, broker_role=self.master_role, broker_id=0)
        if self.schedule is not None:
            self.schedule.load()  # (the offsets it copied from its former master)
        self.ha_master = await self._start_ha_master()
        self.context.flush_waits.set_replicas(self._replicas())
        self._offer_slaves()
        self._start_role_tasks()
        self.registrar.ha_address = self.ha_address
        self._spawn(self._register_as(was=self.own_broker_id))
        log.warning("broker %s is master (epoch %d) at %s", self.config.broker_name, epoch, self.address)
        return self.ha_address

    async def become_slave(self, broker_address: str | None, ha_address: str | None) -> None:
        """Failover names another master (None: none yet): stop taking writes, stop serving slaves,
        follow it (cutting this log back first where it parts from the master's)."""
        assert self.context is not None and self.registrar is not None
        was_master = not self.config.is_slave
        if was_master:
            self.config = self.context.config = dataclasses.replace(
                self.config, broker_role=BrokerRole.SLAVE, broker_id=self.own_broker_id
            )
            self.context.flush_waits.set_replicas(None)
            await self._stop_role_tasks()
            if self.ha_master is not None:
                await self.ha_master.aclose()
                self.ha_master = None
            self._offer_slaves()
            self.registrar.ha_address = ""
            log.warning("broker %s is no longer master", self.config.broker_name)
        if self.ha_slave is None:
            self.ha_slave, self.slave_sync = self._new_ha_slave(), self._new_slave_sync()
            self._start_role_tasks()
        assert self.slave_sync is not None
        self.ha_slave.set_master(ha_address, broker_address)
        self.slave_sync.master_address = broker_address
        if was_master:
            self._spawn(self._register_as(was=0))

    async def _register_as(self, *, was: int) -> None:
        """Registration after a change of role: off the NameServers as brokerId ``was``, on as now."""
        assert self.registrar is not None
        await self.registrar.unregister_all(was)
        await self.registrar.register_all()

    def _take_delay_offsets(self, offsets: dict[int, int]) -> None:
        if self.schedule is not None and offsets != self.schedule.offsets:
            self.schedule.offsets = offsets
            self.schedule.persist()

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

    async def aclose(self) -> None:
        """Stop serving, persist the metadata (of a broker that started: after a failed start what was
        loaded may be partial), then close the store, also when a step before fails. Idempotent."""
        failure: BaseException | None = None
        try:  # (no await in a finally or a handler: compiled, an await there let another task's exception escape)
            await self._stop_serving()
        except BaseException as error:
            failure = error
        await asyncio.to_thread(self.store.close)
        if failure is not None:
            raise failure
        log.info("broker %s stopped", self.config.broker_name)

    async def _stop_serving(self) -> None:
        if self.metrics is not None:
            await self.metrics.aclose()
        await cancel_and_wait(self._tasks, ignore_errors=True)  # failures were logged when they happened
        self._tasks.clear()
        await self._stop_role_tasks()
        if self._etcd is not None:
            await self._etcd.aclose()
        if self.context is not None:
            self.context.long_polling.wake_all()
        if self._server is not None:
            await self._server.aclose()
        if self.registrar is not None:
            await self.registrar.unregister_all()
        if self._client is not None:
            await self._client.aclose()
        if self.ha_master is not None:
            await self.ha_master.aclose()
        if not self._serving:
            return
        self._serving = False
        if self.schedule is not None:
            self.schedule.persist()
        if self.transactions is not None and self.transactions.loaded:
            self.transactions.persist()
        self.offsets.persist(force=True)
        self.filters.persist()

    async def __aenter__(self) -> Broker:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
