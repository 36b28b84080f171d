"""What push and lite-pull consumers share (RebalanceImpl + the consumer half of MQClientInstance):
subscriptions (kept in ``rocketq.client.subscriptions``), heartbeats carrying them, queue rebalancing,
offset storage and send-back.

Rebalancing runs every ``rebalance_interval_s`` and at once when a broker sends
NOTIFY_CONSUMER_IDS_CHANGED. While a subscribed topic has no route (the NameServer does not know it
yet: it is about to be created, or was created a moment ago and its broker has not registered it
yet), rebalancing runs sooner: after 1 s, then 2, 4, ... up to ``rebalance_interval_s``, so a consumer
started before its topic gets the first messages within seconds rather than a full interval later.

Revoked queues are handed back (their offsets committed) before new ones are taken, so that within
one member a queue is never consumed from two places.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final, final

from rocketq.client.config import ConsumeFromWhere, ConsumerConfig, MessageModel
from rocketq.client.consume_stats import ConsumerStats
from rocketq.client.errors import BrokerResponseError, MQClientError, MQConnectionError, ValidationError
from rocketq.client.instance import ClientInstance
from rocketq.client.message import MessageExt, MessageQueue
from rocketq.client.offset_store import LocalFileOffsetStore, OffsetStore, RemoteOffsetStore
from rocketq.client.pull import (
    PullResult,
    QueuePulls,
    broker_id_of,
    is_pull_answer,
    pull_answer_fields,
    pull_result,
)
from rocketq.client.rebalance import STRATEGIES
from rocketq.client.route import MASTER_ID, subscribe_queues
from rocketq.client.running_info import consume_directly_response, running_info_response
from rocketq.client.selector import MessageSelector
from rocketq.client.subscriptions import Subscriptions, check_brokers_take_filters
from rocketq.common.group_topics import RETRY_PREFIX, retry_topic
from rocketq.protocol import (
    ConsumerListBody,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    make_request,
)
from rocketq.protocol.bodies import ConsumerData, ResetOffsetBody, SubscriptionData
from rocketq.protocol.headers import (
    ConsumerSendMsgBackRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetMaxOffsetRequestHeader,
    SearchOffsetRequestHeader,
)
from rocketq.protocol.running_info import ConsumeMessageDirectlyResult, ProcessQueueInfo, QueueInfo
from rocketq.remoting import Connection, RemotingError
from rocketq.remoting.clock import wanted_or_slept
from rocketq.remoting.connection import next_opaque
from rocketq.remoting.tasks import cancel_and_wait

log = logging.getLogger(__name__)

_monotonic: Final = time.monotonic  # (bound once: compiled code reads a Final name as a C static)

MISSING_ROUTE_RETRY_S = 1.0
"""The first wait before asking again for a subscribed topic's missing route (doubling after)."""

QueuesCallback = Callable[[list[MessageQueue]], Awaitable[None]]
ResetCallback = Callable[[dict[MessageQueue, int]], Awaitable[None]]


class ConsumerCore:
    def __init__(
        self, config: ConsumerConfig, *, consume_type: str, on_assigned: QueuesCallback, on_revoked: QueuesCallback
    ) -> None:
        if config.allocate_strategy not in STRATEGIES:
            raise ValidationError(
                f"unknown allocate strategy {config.allocate_strategy!r}; use one of {sorted(STRATEGIES)}"
            )
        self.config = config
        # (an attribute, not a property: every pull asks, and an enum member's lookup costs a thousand
        # instructions in compiled code)
        self.clustering = config.message_model is MessageModel.CLUSTERING
        self._pull_timeout_s = config.consumer_timeout_when_suspend_s  # (read once, as the above)
        self.consume_type = consume_type
        self._subscribed = Subscriptions()
        self.subscriptions = self._subscribed.selectors  # topic -> what of it to consume
        self.assigned: set[MessageQueue] = set()
        self._on_assigned = on_assigned
        self._on_revoked = on_revoked
        self.on_reset: ResetCallback | None = None  # set by the consumer: move assigned queues
        self._rebalance_wanted = asyncio.Event()
        self._subscriptions_changed = False  # tell the brokers (heartbeat) before the next rebalance
        self.rebalance_lock = asyncio.Lock()  # held while the assignment changes (rebalance, reset)
        self._tasks: list[asyncio.Task[Any]] = []
        self._unreachable = False  # no NameServer answered the last route lookup (logged once)
        # each pulled queue's state from one pull to the next (one lookup per pull): where its next pull
        # goes and its requests' template
        self._queue_pulls: dict[MessageQueue, _QueuePullState] = {}
        self.instance = ClientInstance(
            config.client,
            handlers={
                RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: self._on_notify,
                RequestCode.RESET_CONSUMER_CLIENT_OFFSET: self._on_reset_offsets,
                RequestCode.GET_CONSUMER_RUNNING_INFO: self._on_running_info,
                RequestCode.CONSUME_MESSAGE_DIRECTLY: self._on_consume_directly,
            },
            consumer_group=config.group,
        )
        self.instance.consumer_data = self._consumer_data
        self.stats = ConsumerStats()  # pull and consume rates per topic (GET_CONSUMER_RUNNING_INFO)
        self.started_ms = 0
        self.orderly = False  # set by an orderly push consumer
        # the assigned queues' state for GET_CONSUMER_RUNNING_INFO; a push consumer adds its process queues
        self.queue_infos: Callable[[], list[QueueInfo]] = self._plain_queue_infos
        # called before each periodic persist: a pull consumer copies its queues' consumed positions into
        # ``offsets`` there (its blocking facade takes batches on another thread, which must not wake the loop)
        self.store_positions: Callable[[], None] = _no_positions
        # CONSUME_MESSAGE_DIRECTLY: a push consumer's listener on one message; None: it cannot
        self.consume_directly: Callable[[MessageExt], Awaitable[ConsumeMessageDirectlyResult]] | None = None
        self.offsets: OffsetStore = (
            RemoteOffsetStore(config.group, self.invoke_master)
            if config.message_model is MessageModel.CLUSTERING
            else LocalFileOffsetStore(
                config.offset_store_dir, f"{self.instance.client_ip}@{config.client.instance_name}", config.group
            )
        )

    def subscribe(self, topic: str, selector: MessageSelector | str = "*") -> None:
        self._subscribed.add(topic, MessageSelector.of(selector))
        self._subscriptions_changed = bool(self._tasks)
        self._rebalance_wanted.set()

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic``: the next rebalance (at once when running) drops its queues, each
        committed first, and the next heartbeat leaves it out, so the brokers forget it for the group."""
        self._subscribed.remove(topic)
        self._subscriptions_changed = bool(self._tasks)
        self._rebalance_wanted.set()

    def subscription(self, topic: str) -> SubscriptionData:
        """The subscription of ``topic`` as heartbeats and pulls carry it (``Subscriptions.data``)."""
        return self._subscribed.data(topic)

    def selector(self, topic: str) -> MessageSelector:
        """What of ``topic`` this consumer subscribed to (every message when it did not)."""
        return self._subscribed.selector(topic)

    # -- lifecycle ------------------------------------------------------------------------------------

    async def start(self) -> None:
        self.started_ms = int(time.time() * 1000)
        self.offsets.open()
        if self.clustering:
            self.subscriptions.setdefault(retry_topic(self.config.group), MessageSelector.by_tag())
        await self.instance.start()
        try:
            for topic in self.subscriptions:
                await self._route(topic)
            await check_brokers_take_filters(
                self.instance, self.config.group, self._subscribed, self.config.client.request_timeout_s
            )
        except MQConnectionError as exc:  # as Java's consumers: start, and keep asking
            self._namesrv_unreachable(exc)
        except BaseException:
            await self.instance.aclose()
            self.offsets.close()
            raise
        await self.instance.heartbeat()
        if not self._unreachable:
            await self._route_retry_topic()
            await self.rebalance()
        self._tasks.append(asyncio.create_task(self._rebalance_loop()))
        self._tasks.append(asyncio.create_task(self._persist_loop()))

    async def _route_retry_topic(self) -> None:
        """Ask again for the retry topic's route: the heartbeats just sent made brokers that did not have
        it create it (and register it), and its messages on a broker missing from the route would wait
        for the next route poll (``poll_name_server_interval_s``)."""
        if self.clustering:
            with contextlib.suppress(MQClientError, RemotingError):
                await self.instance.update_route(retry_topic(self.config.group))

    async def stop_background(self) -> None:
        """Stop rebalancing and periodic commits (first step of closing: no queue is assigned after it)."""
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
        async with self.rebalance_lock:  # an assignment in progress finishes before we go on
            pass

    async def aclose(self) -> None:
        await self.stop_background()
        await self.offsets.persist_all()
        self.offsets.close()
        await self.instance.unregister(consumer_group=self.config.group)
        await self.instance.aclose()

    async def _persist_loop(self) -> None:
        while True:
            await self.config.client.clock.sleep(self.config.persist_consumer_offset_interval_s)
            self.store_positions()
            try:
                await self.offsets.persist_all()
            except Exception as exc:
                log.warning("group %s: offset persist failed: %s", self.config.group, exc)

    def _a_topic_has_no_route(self) -> bool:
        return any(topic not in self.instance.routes for topic in self.subscriptions)

    async def _rebalance_loop(self) -> None:
        interval = self.config.rebalance_interval_s
        route_retry = MISSING_ROUTE_RETRY_S
        while True:
            wait = interval
            if self._unreachable or self._a_topic_has_no_route():
                wait, route_retry = min(interval, route_retry), min(interval, route_retry * 2)
            else:
                route_retry = MISSING_ROUTE_RETRY_S
            await wanted_or_slept(self._rebalance_wanted, self.config.client.clock, wait)
            self._rebalance_wanted.clear()
            try:
                if self._subscriptions_changed:  # like Java's subscribe() after start: heartbeat at once
                    self._subscriptions_changed = False
                    for topic in list(self.subscriptions):
                        await self._route(topic)  # a new topic may live on brokers not yet known
                    await self.instance.heartbeat()
                await self.rebalance()
            except MQConnectionError as exc:
                self._namesrv_unreachable(exc)
                continue
            except Exception as exc:
                log.warning("group %s: rebalance failed: %s", self.config.group, exc)
            if self._unreachable:
                self._unreachable = False
                log.warning("group %s: a NameServer answers again; consuming", self.config.group)

    def _namesrv_unreachable(self, error: MQConnectionError) -> None:
        """Say once (until one answers again) that no NameServer answers: the rebalance loop keeps asking,
        after 1 s, then 2, 4, ... up to ``rebalance_interval_s``, as it does for a topic without a route."""
        if not self._unreachable:
            self._unreachable = True
            log.warning(
                "group %s: %s; the consumer keeps asking (every %g s at most) and consumes once one answers",
                self.config.group,
                error,
                self.config.rebalance_interval_s,
            )
        else:
            log.debug("group %s: still no NameServer: %s", self.config.group, error)

    async def _on_notify(self, request: RemotingCommand, connection: Connection) -> RemotingCommand | None:
        log.info("group %s: membership changed, rebalancing", self.config.group)
        self._rebalance_wanted.set()
        return None

    async def _on_reset_offsets(self, request: RemotingCommand, connection: Connection) -> RemotingCommand | None:
        """An operator reset this group's offsets (``rocketq admin resetOffsetByTime``): adopt them."""
        if request.ext_fields.get("group") != self.config.group:
            return None
        table = {
            MessageQueue(entry.topic, entry.broker_name, entry.queue_id): entry.offset
            for entry in ResetOffsetBody.decode(request.body).offset_table
        }
        log.info("group %s: offsets reset for %d queue(s)", self.config.group, len(table))
        for queue, offset in table.items():
            self.offsets.update(queue, offset, increase_only=False)
        if self.on_reset is not None:
            async with self.rebalance_lock:
                await self.on_reset({q: o for q, o in table.items() if q in self.assigned})
        return None

    def _plain_queue_infos(self) -> list[QueueInfo]:
        return [
            QueueInfo(q.topic, q.broker_name, q.queue_id, ProcessQueueInfo(commit_offset=self.offsets.table.get(q, 0)))
            for q in sorted(self.assigned)
        ]

    async def _on_running_info(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        """GET_CONSUMER_RUNNING_INFO forwarded by a broker (``rocketq admin consumerStatus``)."""
        return running_info_response(self, request)

    async def _on_consume_directly(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        """CONSUME_MESSAGE_DIRECTLY forwarded by a broker (``rocketq admin consumeMessage``)."""
        return await consume_directly_response(self, request)

    # -- heartbeats -----------------------------------------------------------------------------------

    def _consumer_data(self) -> list[ConsumerData]:
        config = self.config
        return [
            self._subscribed.consumer_data(
                config.group, self.consume_type, config.message_model.value, config.consume_from_where.value
            )
        ]

    # -- rebalance ------------------------------------------------------------------------------------

    async def _route(self, topic: str) -> list[MessageQueue]:
        route = self.instance.routes.get(topic) or await self.instance.update_route(topic)
        return subscribe_queues(topic, route) if route is not None else []

    async def _consumer_ids(self, topic: str) -> list[str]:
        route = self.instance.routes.get(topic)
        if route is None:
            return []
        request_fields = GetConsumerListByGroupRequestHeader(consumer_group=self.config.group).to_ext_fields()
        for broker in sorted(route.broker_datas, key=lambda b: b.broker_name):
            found = self.instance.broker_address(broker.broker_name)  # its master, or a slave without one
            if found is None:
                continue
            address = found[0]
            request = make_request(
                RequestCode.GET_CONSUMER_LIST_BY_GROUP, opaque=next_opaque(), ext_fields=request_fields
            )
            try:
                response = await self.instance.invoke_broker(address, request, self.config.client.request_timeout_s)
            except RemotingError:
                continue
            if response.code == ResponseCode.SUCCESS:
                return sorted(ConsumerListBody.decode(response.body).consumer_id_list)
        return []

    async def rebalance(self) -> None:
        """Recompute this member's queues for every subscribed topic and apply the difference."""
        async with self.rebalance_lock:
            wanted: set[MessageQueue] = set()
            for topic in list(self.subscriptions):
                queues = sorted(await self._route(topic))
                if not self.clustering:
                    wanted.update(queues)
                    continue
                clients = await self._consumer_ids(topic)
                if self.instance.client_id not in clients and queues:
                    await self.instance.heartbeat()  # the broker may not know us yet
                    clients = await self._consumer_ids(topic)
                strategy = STRATEGIES[self.config.allocate_strategy]
                wanted.update(strategy(self.instance.client_id, queues, clients))
            revoked = sorted(self.assigned - wanted)
            added = sorted(wanted - self.assigned)
            if revoked:
                self.assigned -= set(revoked)
                await self._on_revoked(revoked)
                for queue in revoked:
                    await self.offsets.persist(queue)
                    self.offsets.remove(queue)
            if added:
                self.assigned |= set(added)
                await self._on_assigned(added)
            if revoked or added:
                log.info(
                    "group %s member %s: +%s -%s",
                    self.config.group,
                    self.instance.client_id,
                    [str(q) for q in added],
                    [str(q) for q in revoked],
                )

    # -- offsets --------------------------------------------------------------------------------------

    async def invoke_master(self, queue: MessageQueue, request: RemotingCommand) -> RemotingCommand | None:
        """Send an offset request to the queue's master, or to a slave of its group when the route has
        no master (Java's findBrokerAddressInAdmin); None when the route has neither."""
        address = await self.instance.find_master(queue.topic, queue.broker_name)
        if address is None:
            found = self.instance.broker_address(queue.broker_name)
            address = None if found is None else found[0]
        if address is None:
            return None
        return await self.instance.invoke_broker(address, request, self.config.client.request_timeout_s)

    async def start_offset(self, queue: MessageQueue) -> int:
        """Where to start a newly assigned queue: the stored offset, else per consume_from_where
        (RebalancePushImpl.computePullFromWhere). A retry topic starts at 0, or at its end when
        consuming from a timestamp."""
        stored = await self.offsets.read(queue)
        if stored >= 0:
            return stored
        where = self.config.consume_from_where
        retry = queue.topic.startswith(RETRY_PREFIX)
        if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET or (
            retry and where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
        ):
            offset = 0
        elif where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET or retry:
            fields = GetMaxOffsetRequestHeader(topic=queue.topic, queue_id=queue.queue_id).to_ext_fields()
            offset = await self.queue_offset(RequestCode.GET_MAX_OFFSET, queue, fields)
        else:
            timestamp = self.config.consume_timestamp_ms or int(self.config.client.clock.time() * 1000) - 30 * 60 * 1000
            fields = SearchOffsetRequestHeader(
                topic=queue.topic, queue_id=queue.queue_id, timestamp=timestamp
            ).to_ext_fields()
            offset = await self.queue_offset(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, queue, fields)
        self.offsets.update(queue, offset, increase_only=False)
        return offset

    async def queue_offset(self, code: RequestCode, queue: MessageQueue, fields: dict[str, str]) -> int:
        """A queue offset the queue's master answers (``ClientInstance.queue_offset``)."""
        return await self.instance.queue_offset(code, queue.topic, queue.broker_name, fields)

    async def start_offset_or_skip(self, queue: MessageQueue) -> int | None:
        """``start_offset``, or None when the broker cannot tell it now: the queue then leaves this
        member's assignment and the next rebalance tries again (Java skips such a queue too; starting it
        at 0 would replay it whole)."""
        try:
            return await self.start_offset(queue)
        except (RemotingError, MQClientError) as exc:
            log.warning("%s is not consumed for now: its start offset is unknown (%s)", queue, exc)
            self.assigned.discard(queue)
            return None

    async def pull_once(
        self,
        queue: MessageQueue,
        offset: int,
        selector: MessageSelector,
        tags: frozenset[str],
        *,
        commit_offset: int = 0,
        on_result: Callable[[PullResult], None] | None = None,
    ) -> PullResult | None:
        """One long-polling pull of ``queue`` (``tags``: ``selector.tags()``, which the client keeps of
        what the broker returns); None after a failure (already waited the retry delay).

        The answer is decoded in the read that brings it (``Connection.invoke``'s ``read``), and
        ``on_result``, when given, gets the result there too: a push consumer hands the pulled batch to
        its listener from it, before the loop runs whatever else that read (or the one before it in
        the same turn, such as a producer's answer) made ready. ``on_result`` must not wait."""
        config = self.config
        instance = self.instance
        state = self._queue_pulls.get(queue)
        if state is None:
            state = self._queue_pulls[queue] = _QueuePullState()
        found = instance.broker_address(queue.broker_name, state.broker_id)
        address: str | None = None
        broker_id = MASTER_ID
        if found is not None:
            address, broker_id = found
        subscription = self.subscription(queue.topic)
        pulls = state.template
        if pulls is None or selector is not state.selector or subscription is not state.subscription:
            # the settings read and compared only when the selector or the subscription is another
            # object: both are immutable, as is the config, so the same ones make the same template
            group, max_nums, suspend_ms = config.group, config.pull_batch_size, config.broker_suspend_max_time_ms
            expression, expression_type = selector.expression, selector.expression_type
            sub_version = subscription.sub_version
            if pulls is None or not pulls.serves(group, max_nums, expression, suspend_ms, sub_version, expression_type):
                pulls = state.template = QueuePulls(
                    group, queue, max_nums, expression, suspend_ms, sub_version, expression_type
                )
            state.selector, state.subscription = selector, subscription
        # slaves take offsets by UPDATE only
        request = pulls.request(offset, commit_offset if broker_id == MASTER_ID else 0)
        began = _monotonic()

        def read(response: RemotingCommand) -> PullResult | None:
            """The answer, in the read that brought it; None when a slave refused the pull."""
            if broker_id != MASTER_ID and not is_pull_answer(response) and instance.master_address(queue.broker_name):
                log.info("pull of %s from slave %s refused (%s): asking the master", queue, address, response.code)
                return None
            source = address or ""
            fields = pull_answer_fields(response, source)  # (read once, for the suggestion and the result)
            state.broker_id = broker_id_of(fields[0])
            result = pull_result(response, tags, source, fields)
            round_trip_s = _monotonic() - began
            try:
                if on_result is not None:
                    on_result(result)
            finally:  # counted after the hand-over: the listener does not wait for the counters
                self.stats.pulled(queue.topic, len(result.messages), round_trip_s)
            return result

        try:
            if address is None:
                raise MQClientError(f"no broker of {queue.broker_name} in the route")
            timeout_s = self._pull_timeout_s
            try:
                # the usual pull (its broker connected) is written straight to the connection, whose
                # future is awaited here (no coroutines of invoke_broker, RemotingClient.invoke and
                # Connection.invoke between them); otherwise the general path connects first
                connection = instance.remoting.open_connection(address)
                if connection is None:
                    result = await instance.invoke_broker(address, request, timeout_s, read)
                else:
                    sign = instance.sign
                    if sign is not None:
                        sign(request)
                    result = await connection.request(request, timeout_s, read)
            except RemotingError:
                state.broker_id = instance.fallback_broker_id(queue.broker_name, broker_id)
                raise
            if result is None:
                # a slave that refuses (it has not copied the topic or group from its master yet): the
                # master answers this pull, at once
                state.broker_id = MASTER_ID
                return await self.pull_once(
                    queue, offset, selector, tags, commit_offset=commit_offset, on_result=on_result
                )
            return result
        except (RemotingError, MQClientError) as exc:
            # a refusal (NO_PERMISSION: the group may not consume, or not by broadcast) is the operator's
            # to see; either way the queue waits, as Java's executePullRequestLater does, never spins
            level = logging.WARNING if isinstance(exc, BrokerResponseError) else logging.INFO
            delay = config.pull_time_delay_when_exception_s
            log.log(level, "pull of %s failed: %s; retrying in %.1fs", queue, exc, delay)
            await config.client.clock.sleep(delay)
            return None

    async def send_back(self, message: MessageExt, delay_level: int = 0) -> bool:
        """Return a failed message to the broker for a later retry (CONSUMER_SEND_MSG_BACK)."""
        fields = ConsumerSendMsgBackRequestHeader(
            offset=message.commit_log_offset,
            group=self.config.group,
            delay_level=delay_level,
            origin_msg_id=message.msg_id,
            origin_topic=message.topic,
            max_reconsume_times=self.config.reconsume_limit(orderly=False),
        ).to_ext_fields()
        request = make_request(RequestCode.CONSUMER_SEND_MSG_BACK, opaque=next_opaque(), ext_fields=fields)
        try:
            response = await self.instance.invoke_broker(
                message.store_host, request, self.config.client.request_timeout_s
            )
        except RemotingError as exc:
            log.warning("send-back of %s failed: %s", message.msg_id, exc)
            return False
        if response.code != ResponseCode.SUCCESS:
            log.warning("send-back of %s refused: %s %s", message.msg_id, response.code, response.remark)
        return response.code == ResponseCode.SUCCESS


@final
class _QueuePullState:
    """What a pulled queue keeps from one pull to the next: the broker id of its group the next pull
    goes to, the last answer's suggestion (suggestWhichBrokerId; docs/replication.md#reads-from-slaves),
    the master at first, and its pull requests' template (``QueuePulls``, made again when the
    consumer's settings for the queue change: a pull with the selector and subscription it was last
    checked against uses it as it is)."""

    def __init__(self) -> None:
        self.broker_id = MASTER_ID
        self.template: QueuePulls | None = None
        # the selector and subscription the template was last found to serve
        self.selector: MessageSelector | None = None
        self.subscription: SubscriptionData | None = None


def _no_positions() -> None:
    """``ConsumerCore.store_positions`` of a consumer whose offset store is always up to date."""
