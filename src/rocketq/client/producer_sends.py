"""The ``Producer``'s sends other than ``send``: oneway, orderly (to a chosen queue) and batched, and
``send_async``'s coroutine, made with the producer's own preparation, routes and attempts. Each function
is the body of the ``Producer`` method of its name (which documents it), given the producer and its
arguments, the idempotent choice made (``marked``); and the lookup of a queue's master address."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rocketq.client.errors import MQConnectionError, RouteNotFoundError, ValidationError
from rocketq.client.message import Message, MessageQueue, SendResult
from rocketq.client.send_checks import send_request
from rocketq.common.message import java_string_hash
from rocketq.protocol import RemotingCommand
from rocketq.remoting import RemotingError

if TYPE_CHECKING:
    from rocketq.client.instance import ClientInstance
    from rocketq.client.producer import Producer, QueueSelector, SendCallback


async def send_with_callback(
    producer: Producer,
    message: Message,
    callback: SendCallback | None,
    timeout: float | None,
    retries: int,
    idempotent: bool | None,
) -> SendResult:
    """``Producer.send_async``'s coroutine: the send, then ``callback(result, error)``."""
    try:
        result = await producer._send_single(message, timeout, retries, idempotent)
    except Exception as exc:
        if callback is not None:
            callback(None, exc)
        raise
    if callback is not None:
        callback(result, None)
    return result


async def master_address(instance: ClientInstance, queue: MessageQueue) -> str:
    """The address of ``queue``'s master broker: known, else after the topic's route is looked up
    again, else after the brokers' addresses are (RouteNotFoundError when there is none)."""
    address = instance.master_address(queue.broker_name)
    if address is None:
        await instance.update_route(queue.topic)
        address = instance.master_address(queue.broker_name)
    if address is None:  # a queue chosen by the caller, of a topic its broker will create
        await instance.update_broker_addresses()
        address = instance.master_address(queue.broker_name)
    if address is None:
        raise RouteNotFoundError(f"broker {queue.broker_name} has no master address")
    return address


async def send_oneway(producer: Producer, message: Message, marked: bool) -> None:
    """``Producer.send_oneway``: one attempt, no answer."""
    body, properties, sys_flag, _ = producer._prepare(message, marked)
    info = await producer._publish_info(message.topic)
    queue = producer._select_queue(info, None)
    settings = producer._settings
    request = send_request(settings, queue, body, properties, sys_flag, message.flag, oneway=True, idempotent=marked)
    address = await master_address(producer.instance, queue)
    try:
        await producer.instance.remoting.oneway(address, request)
    except RemotingError as exc:
        raise MQConnectionError(f"send to {queue} failed: {exc}") from exc


async def send_orderly(
    producer: Producer,
    message: Message,
    sharding_key: str | None,
    selector: QueueSelector | None,
    arg: Any,
    timeout: float | None,
    marked: bool,
) -> SendResult:
    """``Producer.send_orderly``: one attempt, to the queue ``selector`` or ``sharding_key`` chooses."""
    if (selector is None) == (sharding_key is None):
        raise ValidationError("give exactly one of sharding_key and selector")
    prepared = producer._message_request(message, marked)
    info = await producer._publish_info(message.topic)
    queues = info.queues
    if selector is not None:
        queue = selector(queues, message, arg)
    else:
        assert sharding_key is not None
        queue = queues[(java_string_hash(sharding_key) & 0x7FFFFFFF) % len(queues)]
    try:
        timeout_s = timeout or producer._settings.send_msg_timeout_s
        return await producer._send_once(queue, prepared.request(queue), prepared.unique_id, timeout_s)
    except RemotingError as exc:
        raise MQConnectionError(f"send to {queue} failed: {exc}") from exc


async def send_batch(
    producer: Producer,
    messages: Sequence[Message],
    queue: MessageQueue | None,
    timeout: float | None,
    marked: bool,
) -> SendResult:
    """``Producer.send_batch``: one request of ``messages``, to ``queue`` or as ``send`` chooses."""
    body, ids = producer._batch_body(messages, marked)
    settings = producer._settings

    def request(target: MessageQueue) -> RemotingCommand:
        return send_request(settings, target, body, "", 0, 0, batch=True, idempotent=marked)

    topic = messages[0].topic
    if queue is not None and queue.topic != topic:
        raise ValidationError(f"the batch's topic is {topic!r}, the queue's {queue.topic!r}")
    return await producer._send_with_retries(topic, request, ",".join(ids), timeout, settings.retries, marked, queue)
