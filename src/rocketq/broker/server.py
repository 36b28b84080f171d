"""Broker: wires the store, the managers, the remoting server and the background tasks, and runs them.

``Broker`` starts and stops; what it is made of and its upkeep are in ``rocketq.broker.broker_parts``, its
roles (master, slave, failover's changes) in ``rocketq.broker.broker_roles``, its base classes."""

from __future__ import annotations

import asyncio
import logging
import time

from rocketq.acl import AclConfigError
from rocketq.broker import consume_rates
from rocketq.broker.acl import BrokerAcl
from rocketq.broker.broker_roles import BrokerRoles
from rocketq.broker.context import BrokerContext
from rocketq.broker.filter_bit_maps import FilterBitMaps
from rocketq.broker.grouped_puts import GroupedPuts
from rocketq.broker.handlers import handler_table
from rocketq.broker.idempotent_sends import IdempotentSends
from rocketq.broker.long_polling import LongPolling
from rocketq.broker.loop_dispatch import FlushWaits, LoopDispatch
from rocketq.broker.rebalance_locks import RebalanceLockTable
from rocketq.broker.registration import Registrar
from rocketq.broker.retention_guard import UnconsumedGuard
from rocketq.broker.runtime_info import sample_runtime
from rocketq.broker.schedule import ScheduleService
from rocketq.broker.transactions.checks import CheckService
from rocketq.broker.transactions.service import TransactionService
from rocketq.failover.etcd import EtcdClient
from rocketq.failover.service import FailoverService, failover_settings
from rocketq.metrics.broker import BrokerMetrics
from rocketq.metrics.exporter import exporter_enabled
from rocketq.remoting import RemotingClient, RemotingServer
from rocketq.remoting.address import listens_beyond_loopback
from rocketq.remoting.tasks import cancel_and_wait

log = logging.getLogger(__name__)


class Broker(BrokerRoles):
    """``async with Broker(config) as broker:`` starts it; ``aclose()`` stops it gracefully: stop
    accepting, answer held pulls, finish in-flight requests, persist offsets, close the store.
    ``clock`` drives the transaction check-back (tests give a ``rocketq.testing.FakeClock``); the
    constructor is ``BrokerParts.__init__`` (``rocketq.broker.broker_parts``)."""

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
        long_polling = LongPolling(loop, self.store, self.clock)
        if config.is_slave:
            self.ha_slave = self._new_ha_slave()
        else:
            self.ha_master = await self._start_ha_master()
            self.store.epochs.begin(self.store.epochs.last_epoch + 1, self.store.start_writing())
        dispatch, flush_waits = LoopDispatch(self.store, loop), FlushWaits(self.store, self._replicas(), self.clock)
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
