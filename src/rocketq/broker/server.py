"""Broker: wires the store, the managers, the remoting server and the background tasks, and runs them."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import Any

from rocketq.broker import consume_rates
from rocketq.broker.client_manager import ClientManager
from rocketq.broker.clock import SYSTEM_CLOCK, Clock
from rocketq.broker.config import BrokerConfig
from rocketq.broker.consumer_offsets import ConsumerOffsetManager
from rocketq.broker.context import BrokerContext
from rocketq.broker.grouped_puts import GroupedPuts
from rocketq.broker.handlers import handler_table
from rocketq.broker.handlers.clients import notify_group_changed
from rocketq.broker.long_polling import LongPolling
from rocketq.broker.loop_dispatch import FlushWaits, LoopDispatch
from rocketq.broker.rebalance_locks import RebalanceLockTable
from rocketq.broker.registration import Registrar
from rocketq.broker.schedule import ScheduleService
from rocketq.broker.subscription_groups import SubscriptionGroupManager
from rocketq.broker.topic_config import TopicConfigManager
from rocketq.broker.transactions.checks import CheckService
from rocketq.broker.transactions.service import TransactionService
from rocketq.remoting import Connection, RemotingClient, RemotingServer
from rocketq.remoting.tasks import cancel_and_wait
from rocketq.store import MessageStore

log = logging.getLogger(__name__)


class Broker:
    """``async with Broker(config) as broker:`` starts it; ``aclose()`` stops it gracefully: stop
    accepting, answer held pulls, finish in-flight requests, persist offsets, close the store.
    ``clock`` drives the transaction check-back (tests give a ``rocketq.testing.FakeClock``)."""

    def __init__(self, config: BrokerConfig, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
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
        self._tasks: list[asyncio.Task[Any]] = []
        self._server: RemotingServer | None = None
        self._client: RemotingClient | None = None
        self.context: BrokerContext | None = None
        self.consume_rates = consume_rates.ConsumeRates()
        self.registrar: Registrar | None = None
        self.schedule: ScheduleService | None = None
        self.transactions: TransactionService | None = None
        self.transaction_checks: CheckService | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "broker not started"
        return self._server.port

    @property
    def address(self) -> str:
        assert self.context is not None, "broker not started"
        return self.context.address

    async def start(self) -> Broker:
        config = self.config
        await asyncio.to_thread(self.store.start)
        self.topics.load()
        self.offsets.load()
        self.groups.load()
        loop = asyncio.get_running_loop()
        long_polling = LongPolling(loop, self.store.get_max_offset_in_queue)
        dispatch, flush_waits = LoopDispatch(self.store), FlushWaits(self.store)
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
            address="",
            consume_rates=self.consume_rates,
        )
        self.transactions = self.context.transactions = TransactionService(self.context, self.clock)
        await self.transactions.load()
        self.transaction_checks = CheckService(self.transactions, self.context)
        self._server = RemotingServer(
            handler_table(self.context),
            host=config.listen_host,
            port=config.listen_port,
            idle_timeout_s=config.server_channel_max_idle_time_seconds,
            on_close=self._channel_closed,
        )
        await self._server.start()
        self.context.advertise(f"{config.advertised_ip}:{self._server.port}")
        self.store.add_arrival_listener(long_polling.on_arrival)
        self.registrar = Registrar(self.context, self._client)
        self.context.request_registration = self.registrar.trigger
        self.context.register_now = self.registrar.register_all
        self.schedule = ScheduleService(self.context)
        self.schedule.load()
        self._spawn(self.registrar.run())
        self._spawn(self._every(config.flush_consumer_offset_interval_ms / 1000, self._persist_offsets))
        self._spawn(self._every(config.client_channel_scan_interval_ms / 1000, self._expire_channels))
        self._spawn(self.schedule.run())
        self._spawn(self.transaction_checks.run())
        self.consume_rates.sample(time.monotonic())
        self._spawn(self._every(consume_rates.SAMPLE_INTERVAL_S, self._sample_consume_rates))
        log.info(
            "broker %s (cluster %s) serving at %s, store %s",
            config.broker_name,
            config.broker_cluster_name,
            self.context.address,
            config.store_path_root_dir,
        )
        return self

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

    async def _sample_consume_rates(self) -> None:
        self.consume_rates.sample(time.monotonic())

    async def _persist_offsets(self) -> None:
        await asyncio.to_thread(self.offsets.persist)

    async def _expire_channels(self) -> None:
        timeout_s = self.config.channel_expired_timeout_ms / 1000
        for channel in self.clients.expired_channels(time.monotonic(), timeout_s):
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

    async def aclose(self) -> None:
        await cancel_and_wait(self._tasks, ignore_errors=True)  # failures were logged when they happened
        self._tasks.clear()
        if self.context is not None:
            self.context.long_polling.wake_all()
        if self._server is not None:
            await self._server.aclose()
        if self.registrar is not None:
            await self.registrar.unregister_all()
        if self._client is not None:
            await self._client.aclose()
        if self.schedule is not None:
            self.schedule.persist()
        if self.transactions is not None and self.transactions.loaded:
            self.transactions.persist()
        self.offsets.persist(force=True)
        await asyncio.to_thread(self.store.close)
        log.info("broker %s stopped", self.config.broker_name)

    async def __aenter__(self) -> Broker:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
