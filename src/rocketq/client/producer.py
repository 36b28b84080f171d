"""Producer: the async core (DefaultMQProducer). ``rocketq.client.sync.SyncProducer`` wraps it.

Sends pick a queue round-robin, skipping brokers in latency back-off; a failed synchronous send is
retried (``retry_times_when_send_failed``) on another broker. An unknown topic is sent through the
``TBW102`` template route so the broker creates it. Bodies over 4 KiB are zlib-compressed.

An idempotent send (``ProducerConfig.idempotent`` or ``idempotent=True`` per send; rocketq brokers
only, see docs/idempotent-send.md) asks the broker to store its message once: a repeat of its UNIQ_KEY
within the broker's window is answered with the first store's result. Its id is written into the
message's properties, so sending the same ``Message`` again is a repeat too. After a timeout or a lost
connection (the broker may have stored it) it is retried on the same broker, where the repeat is
recognised; after a definite failure, on another broker as usual.

With ``ProducerConfig.auto_batch`` (on by default), plain sends made while a request to their topic is
in flight leave together in one batch request at the end of the loop's turn, each with its own result
(``rocketq.client.auto_batch``; docs/producer-path.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Final

from mypy_extensions import mypyc_attr

from rocketq.client import producer_sends
from rocketq.client.auto_batch import AutoBatcher
from rocketq.client.config import ProducerConfig
from rocketq.client.errors import (
    BrokerResponseError,
    MQClientError,
    MQConnectionError,
)
from rocketq.client.instance import ClientInstance
from rocketq.client.latency import LatencyFaultTolerance, select_queue
from rocketq.client.message import Message, MessageQueue, SendResult
from rocketq.client.route import TopicPublishInfo, lookup_publish_info, publish_info
from rocketq.client.send_accumulator import Accumulator, coalescible
from rocketq.client.send_checks import PreparedSend, SendSettings, batch_body, prepared_message
from rocketq.client.send_outcome import FirstAttempt, attempt_timeout, send_result, worth_retrying
from rocketq.client.unique_id import UniqueIdGenerator
from rocketq.protocol import RemotingCommand
from rocketq.remoting import ConnectionClosedError, RemotingError, RemotingTimeoutError, RequestHandler

if TYPE_CHECKING:
    from rocketq.client.transaction_group import TransactionGroup

log = logging.getLogger(__name__)

QueueSelector = Callable[[Sequence[MessageQueue], Message, Any], MessageQueue]
SendCallback = Callable[[SendResult | None, BaseException | None], None]
LoopSend = Coroutine[Any, Any, SendResult]
"""A send's part that runs on the producer's loop (all of it, or the attempts after a failed first one)."""

_monotonic: Final = time.monotonic
_wall_clock: Final = time.time
"""The clocks a send reads, bound once: compiled, ``time.monotonic()`` is a lookup of the attribute on
the module and then the call (the lookup about 270 instructions; a send reads the clocks three times)."""


@mypyc_attr(allow_interpreted_subclasses=True)  # users may subclass it; see rocketq.native
class Producer:
    """Use from one event loop. ``async with Producer(group="g", namesrv_addr="127.0.0.1:9876") as p:``."""

    def __init__(
        self, config: ProducerConfig | None = None, *, group: str | None = None, namesrv_addr: str | None = None
    ) -> None:
        config = config or ProducerConfig()
        if group is not None:
            config = dataclasses.replace(config, group=group)
        if namesrv_addr is not None:
            config = dataclasses.replace(config, client=dataclasses.replace(config.client, namesrv_addr=namesrv_addr))
        self.config = config
        self._settings = settings = SendSettings(config)
        self._instance: ClientInstance | None = None
        self._publish: dict[str, TopicPublishInfo] = {}
        self._fault = LatencyFaultTolerance()
        self._ids: UniqueIdGenerator | None = None
        self._pending: set[asyncio.Task[Any]] = set()
        self._valid_topics: set[str] = set()
        self._closed = False
        self._batcher: AutoBatcher | None = None
        if config.auto_batch:
            accumulator = Accumulator(config.batch_max_bytes, config.batch_max_messages)
            self._batcher = AutoBatcher(
                settings, accumulator, self._prepare, self._send_message, self._send_with_retries, self._pending
            )

    # -- lifecycle ------------------------------------------------------------------------------------

    async def start(self) -> Producer:
        """Connect: look up the NameServers and start the heartbeats. Returns the producer."""
        if self._closed:
            raise MQClientError("the producer is closed; make a new one")
        if self._instance is not None:
            raise MQClientError("the producer is already started")
        instance = ClientInstance(self.config.client, handlers=self._request_handlers())
        instance.producer_groups.add(self.config.group)
        instance.route_listeners.append(self._route_changed)
        await instance.start()
        if self._batcher is not None:
            self._batcher.loop = asyncio.get_running_loop()
        self._instance = instance
        self._ids = UniqueIdGenerator(instance.client_ip)
        return self

    def _request_handlers(self) -> dict[int, RequestHandler]:
        """Handlers of the requests brokers send this producer (a transaction producer answers checks)."""
        return {}

    async def aclose(self) -> None:
        """Wait for sends in flight, unregister from the brokers and disconnect, for good."""
        if self._instance is None:
            return
        self._closed = True
        if self._batcher is not None:  # sends waiting for their batch leave now
            self._batcher.flush()
        if self._pending:
            await asyncio.wait(set(self._pending), timeout=self.config.send_msg_timeout_s)
        instance, self._instance = self._instance, None
        await instance.unregister(producer_group=self.config.group)
        await instance.aclose()

    async def __aenter__(self) -> Producer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def instance(self) -> ClientInstance:
        """The started producer's connection to NameServers and brokers (MQClientError when not running)."""
        if self._instance is None:
            raise self._not_running()
        return self._instance

    def _not_running(self) -> MQClientError:
        state = "closed" if self._closed else "not started (call start() or use 'async with')"
        return MQClientError(f"the producer is {state}")

    def _unique_ids(self) -> UniqueIdGenerator:
        if self._ids is None or self._instance is None:
            raise self._not_running()
        return self._ids

    # -- routes ---------------------------------------------------------------------------------------

    def _route_changed(self, topic: str, route: Any) -> None:
        if topic in self._publish:
            self._publish[topic] = publish_info(topic, route)

    def _cached_publish_info(self, topic: str) -> TopicPublishInfo | None:
        """``topic``'s cached route when it has a queue to send to; None when it must be looked up
        (``_publish_info``). The one cache check of every send path, the blocking sender's included."""
        info = self._publish.get(topic)
        return info if info is not None and info.queues else None

    async def _publish_info(self, topic: str) -> TopicPublishInfo:
        """``topic``'s route to send by: the cached one, else looked up and kept (then a heartbeat, so
        that the brokers know this producer before its first send)."""
        info = self._cached_publish_info(topic)
        if info is None:
            instance = self.instance
            config = self.config
            info = await lookup_publish_info(instance, topic, config.create_topic_key, config.default_topic_queue_nums)
            self._publish[topic] = info
            await instance.heartbeat()
        return info

    async def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        """The queues a send to ``topic`` can go to (the writable queues of its master brokers; for a
        topic not created yet, those the broker would create it with)."""
        return list((await self._publish_info(topic)).queues)

    def _select_queue(self, info: TopicPublishInfo, last_broker: str | None) -> MessageQueue:
        fault = self._fault if self._settings.latency_fault else None
        return select_queue(info.queues, info.next_index(), last_broker, fault)

    # -- message preparation ----------------------------------------------------------------------------

    def _idempotent(self, idempotent: bool | None) -> bool:
        return self._settings.idempotent if idempotent is None else idempotent

    def _prepare(
        self,
        message: Message,
        idempotent: bool = False,
        extra: dict[str, str] | None = None,
        now_ms: int | None = None,
    ) -> tuple[bytes, str, int, str]:
        """(body, properties text, sys_flag, unique id) as they go on the wire: ``prepared_message``
        with this producer's settings, unique ids and checked topics."""
        ids = self._unique_ids()
        return prepared_message(message, self._settings, ids, self._valid_topics, idempotent, extra, now_ms)

    async def _send_once(
        self,
        queue: MessageQueue,
        request: RemotingCommand,
        unique_id: str,
        timeout_s: float,
        began: float | None = None,
    ) -> SendResult:
        """One attempt: ``request`` to ``queue``'s master, its answer made a ``SendResult`` (its latency
        noted). ``began``: a monotonic reading the caller took just before (one clock read less)."""
        instance = self.instance
        address = instance.master_address(queue.broker_name)
        if address is None:  # looked up first: the attempt starts after it
            address = await producer_sends.master_address(instance, queue)
            began = None
        if began is None:
            began = _monotonic()
        try:
            response = await instance.remoting.invoke(address, request, timeout_s)
        except RemotingError:
            self._attempt_failed(queue, began)
            raise
        return self._answered(queue, address, unique_id, response, began)

    def _answered(
        self, queue: MessageQueue, address: str, unique_id: str, response: RemotingCommand, began: float
    ) -> SendResult:
        """The result of an attempt started at ``began`` (monotonic) that ``response`` answered, its latency
        noted for ``queue``'s broker (BrokerResponseError when the broker refused the message)."""
        latency_ms = (_monotonic() - began) * 1000
        try:
            result = send_result(response, queue, unique_id, address)
        except BrokerResponseError:
            self._fault.update(queue.broker_name, latency_ms, failed=True)
            raise
        self._fault.update(queue.broker_name, latency_ms, failed=False)
        return result

    def _attempt_failed(self, queue: MessageQueue, began: float) -> None:
        """Note an attempt to ``queue``'s broker that got no answer (lost, timed out)."""
        self._fault.update(queue.broker_name, (_monotonic() - began) * 1000, failed=True)

    # -- sending --------------------------------------------------------------------------------------

    def send(self, message: Message, *, timeout: float | None = None, idempotent: bool | None = None) -> LoopSend:
        """Send and wait for the broker's answer, retrying on another broker when it fails (on the same
        one after a timeout when idempotent). ``idempotent``: None follows ``ProducerConfig.idempotent``.

        Returns the send's coroutine, to await (``result = await producer.send(message)``) or to make a
        Task of: ``_send_single``'s own, without a coroutine of this method's around it (in the compiled
        build an ``async def`` here was two coroutines more per send: its own and the interpreted one
        that documents a compiled ``async def`` method, ``rocketq.native.coroutines``)."""
        return self._send_single(message, timeout, self._settings.retries, idempotent)

    async def _send_single(
        self, message: Message, timeout: float | None, retries: int, idempotent: bool | None
    ) -> SendResult:
        """``send``'s path (and ``send_async``'s). The common case (the topic's route cached, the queue's
        broker connected) makes its first attempt in this one coroutine (``_first_attempt``, as a blocking
        caller does): the request written straight to the connection, whose future it awaits
        (``Connection.request``). A failed attempt is followed by ``_send_with_retries``'s, within the
        send's deadline (``_first_outcome``). Anything else goes alone as ``_send_message``, or,
        auto-batched, waits for the next batch of its topic (``AutoBatcher.send``), whose count of
        requests in flight a plain message sent here joins."""
        settings = self._settings
        marked = settings.idempotent if idempotent is None else idempotent
        topic = message.topic
        batcher = self._batcher
        coalesce = batcher is not None and not marked and coalescible(message, settings.compress_over)
        instance = self._instance
        info = self._cached_publish_info(topic)
        accumulator = batcher.accumulator if batcher is not None and coalesce else None
        # (the topic's count of requests in flight checked and joined in one step: start_if_idle)
        if instance is None or info is None or (accumulator is not None and not accumulator.start_if_idle(topic)):
            if batcher is None or accumulator is None:
                return await self._send_message(message, timeout, retries, idempotent)
            return await batcher.send(message, timeout, retries)
        try:
            attempt = self._first_attempt(message, timeout, retries, marked, info, instance)
            address, command = attempt.address, attempt.command
            connection = None if address is None else instance.remoting.open_connection(address)
            if connection is None or command is None or address is None:  # the general attempt connects
                return await self._send_prepared(attempt.prepared, topic, timeout, retries)
            began = _monotonic()  # the attempt's start and the send's deadline's
            answer: RemotingCommand | RemotingError
            try:
                answer = await connection.request(command, attempt.attempt_s)
            except RemotingError as exc:  # no answer
                answer = exc
            outcome = self._first_outcome(attempt, address, began, answer)
            return outcome if isinstance(outcome, SendResult) else await outcome
        finally:
            if accumulator is not None:
                accumulator.finished(topic)

    def _first_attempt(
        self,
        message: Message,
        timeout: float | None,
        retries: int,
        marked: bool,
        info: TopicPublishInfo,
        instance: ClientInstance,
    ) -> FirstAttempt:
        """A send's first attempt on the common case, made ready alike for the loop (``_send_single``) and
        a blocking caller (``rocketq.client.blocking_send``): the message prepared
        (``_message_request``), the queue chosen, its master's address and, when that is known, the
        request to it, signed; the send's time limit and the attempt's. ``marked``: idempotent."""
        prepared = self._message_request(message, marked)
        queue = self._select_queue(info, None)
        address = instance.master_address(queue.broker_name)
        command = None
        if address is not None:
            command = prepared.request(queue)
            sign = instance.sign
            if sign is not None:
                sign(command)
        settings = self._settings
        total_s = timeout or settings.send_msg_timeout_s
        attempt_s = min(total_s, attempt_timeout(settings.send_attempt_timeout_s, total_s, retries, marked))
        return FirstAttempt(message.topic, prepared, queue, address, command, total_s, attempt_s, retries)

    def _first_outcome(
        self, attempt: FirstAttempt, address: str, began: float, answer: RemotingCommand | RemotingError
    ) -> SendResult | LoopSend:
        """What follows ``attempt`` (``_first_attempt``) to ``address``, started at ``began`` (monotonic):
        the ``SendResult`` of its ``answer`` (``_answered``); else, when it got none (``answer`` is the
        error) or was refused, the coroutine of the attempts after it (``_send_with_retries``), within
        the send's deadline."""
        queue = attempt.queue
        prepared = attempt.prepared
        failure: Exception
        if isinstance(answer, RemotingCommand):
            try:
                return self._answered(queue, address, prepared.unique_id, answer, began)
            except BrokerResponseError as exc:  # refused (its latency noted by _answered)
                failure = exc
        else:
            self._attempt_failed(queue, began)
            failure = answer
        attempt.failed(failure, began + attempt.total_s)
        return self._send_prepared(prepared, attempt.topic, attempt.total_s, attempt.retries, attempt)

    async def _send_message(
        self,
        message: Message,
        timeout: float | None,
        retries: int,
        idempotent: bool | None,
        extra: dict[str, str] | None = None,
    ) -> SendResult:
        marked = self._idempotent(idempotent)
        return await self._send_prepared(self._message_request(message, marked, extra), message.topic, timeout, retries)

    def _message_request(self, message: Message, marked: bool, extra: dict[str, str] | None = None) -> PreparedSend:
        """``message`` prepared once to travel alone (``PreparedSend``: its request to a given queue, its
        unique id). ``marked``: an idempotent send."""
        born_ms = int(_wall_clock() * 1000)
        prepared = self._prepare(message, marked, extra, born_ms)
        return PreparedSend(self._settings, prepared, message.flag, marked, born_ms)

    def _send_prepared(
        self,
        prepared: PreparedSend,
        topic: str,
        timeout: float | None,
        retries: int,
        first: FirstAttempt | None = None,
    ) -> LoopSend:
        """The attempts of a message sent alone (``_send_with_retries``), after ``first`` when given."""
        request, unique_id, marked = prepared.request, prepared.unique_id, prepared.marked
        return self._send_with_retries(topic, request, unique_id, timeout, retries, marked, None, first)

    async def _send_with_retries(
        self,
        topic: str,
        request: Callable[[MessageQueue], RemotingCommand],
        unique_id: str,
        timeout: float | None,
        retries: int,
        idempotent: bool,
        fixed_queue: MessageQueue | None = None,
        first: FirstAttempt | None = None,
    ) -> SendResult:
        """Up to ``1 + retries`` attempts within the send timeout, each ``request(queue)`` to a queue chosen
        anew (another broker than the last), except that an idempotent send that timed out or lost its
        connection, and so may have been stored, goes to the same queue again; with ``fixed_queue``, every
        attempt goes there. ``first``: the first attempt was made already (by a blocking caller) and
        failed; the others follow it within its deadline."""
        settings = self._settings
        total_s = timeout or settings.send_msg_timeout_s
        now = _monotonic()  # read once per attempt: the deadline's, the attempt's start
        deadline = now + total_s if first is None else first.deadline
        attempt_s = attempt_timeout(settings.send_attempt_timeout_s, total_s, retries, idempotent)
        queue: MessageQueue | None = fixed_queue
        last_error: Exception | None = None
        attempts = 0
        if first is not None and first.error is not None:
            queue, last_error, attempts = first.queue, first.error, 1
            await self._before_retry(topic, queue, attempts, last_error)
            now = _monotonic()
        while attempts <= retries:
            remaining = deadline - now
            if remaining <= 0:
                break
            attempts += 1
            began: float | None = now
            if queue is None or (fixed_queue is None and not (idempotent and isinstance(last_error, _MAYBE_STORED))):
                info = self._cached_publish_info(topic)
                if info is None:
                    info = await self._publish_info(topic)
                    began = None  # the route was looked up: _send_once reads the clock again
                queue = self._select_queue(info, queue.broker_name if queue else None)
            try:
                return await self._send_once(queue, request(queue), unique_id, min(remaining, attempt_s), began)
            except (RemotingError, MQClientError) as exc:
                last_error = exc
            await self._before_retry(topic, queue, attempts, last_error)
            now = _monotonic()
        error = MQConnectionError if isinstance(last_error, RemotingError | MQConnectionError) else MQClientError
        raise error(f"send to topic {topic!r} failed after {attempts} attempts: {last_error}") from last_error

    async def _before_retry(self, topic: str, queue: MessageQueue, attempts: int, error: Exception) -> None:
        """After attempt ``attempts`` to ``queue`` failed with ``error``: raise it when no retry can help,
        else refresh what the failure says is stale."""
        if not worth_retrying(error):
            raise error
        log.info("send to %s failed (attempt %d): %s", queue, attempts, error)
        if isinstance(error, BrokerResponseError) and error.refresh_route:
            self._publish.pop(topic, None)
        elif isinstance(error, RemotingError | MQConnectionError):
            # the broker is unreachable: ask the NameServers again (a group whose master died may have
            # a new one already, with failover: docs/failover.md), not only at the next route poll;
            # the route known is kept when they know none
            with contextlib.suppress(MQClientError):
                await self.instance.update_route(topic)

    def send_async(
        self,
        message: Message,
        callback: SendCallback | None = None,
        *,
        timeout: float | None = None,
        idempotent: bool | None = None,
    ) -> asyncio.Task[SendResult]:
        """Start a send; returns its task. ``callback(result, error)`` runs on the loop when it ends."""
        retries = self._settings.async_retries
        run = producer_sends.send_with_callback(self, message, callback, timeout, retries, idempotent)
        task = asyncio.get_running_loop().create_task(run)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        if callback is not None:
            task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)
        return task

    async def send_oneway(self, message: Message, *, idempotent: bool | None = None) -> None:
        """Send without waiting for (or getting) an answer; one attempt."""
        await producer_sends.send_oneway(self, message, self._idempotent(idempotent))

    async def send_orderly(
        self,
        message: Message,
        *,
        sharding_key: str | None = None,
        selector: QueueSelector | None = None,
        arg: Any = None,
        timeout: float | None = None,
        idempotent: bool | None = None,
    ) -> SendResult:
        """Send to the queue chosen by ``selector(queues, message, arg)`` or by hashing ``sharding_key``:
        messages with the same key keep their order. No retry on another queue (that would break it)."""
        marked = self._idempotent(idempotent)
        return await producer_sends.send_orderly(self, message, sharding_key, selector, arg, timeout, marked)

    def transaction_group(self, group_id: str, *, immunity_s: int | None = None) -> TransactionGroup:
        """A grouped transaction sent and ended through this producer (``rocketq.client.transaction_group``)."""
        from rocketq.client.transaction_group import DEFAULT_IMMUNITY_S, TransactionGroup

        return TransactionGroup(self, group_id, immunity_s=immunity_s or DEFAULT_IMMUNITY_S)

    async def send_batch(
        self,
        messages: Sequence[Message],
        *,
        queue: MessageQueue | None = None,
        timeout: float | None = None,
        idempotent: bool | None = None,
    ) -> SendResult:
        """Send several messages of one topic in one request (stored together, in order): to ``queue``
        (retried there), or to a queue chosen as for ``send`` (a retry goes to another broker). Idempotent,
        the batch is one unit: a repeat of it (the same messages, hence unique ids) is answered with the
        first store's result."""
        return await producer_sends.send_batch(self, messages, queue, timeout, self._idempotent(idempotent))

    def _batch_body(self, messages: Sequence[Message], idempotent: bool = False) -> tuple[bytes, list[str]]:
        """A batch's request body and its messages' unique ids (``rocketq.client.send_checks.batch_body``)."""
        return batch_body(messages, self._unique_ids(), self._settings.max_message_size, self._valid_topics, idempotent)


_MAYBE_STORED = (RemotingTimeoutError, ConnectionClosedError)
"""Failures after which the broker may have stored the message: the request may have reached it."""
