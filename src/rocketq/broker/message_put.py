"""Storing messages for a request: the delay redirect into SCHEDULE_TOPIC_XXXX, the dead-letter topic,
and a put that waits for its fsync when asked. Shared by SEND_MESSAGE and CONSUMER_SEND_MSG_BACK."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Coroutine, Sequence
from typing import Any, Final

from rocketq.broker.context import BrokerContext
from rocketq.broker.topic_config import PERM_READ, PERM_WRITE
from rocketq.common.group_topics import dlq_topic
from rocketq.common.message import SCHEDULE_TOPIC, Property
from rocketq.common.record import SysFlag
from rocketq.protocol import ResponseCode, TopicConfig
from rocketq.store import MeasuredBatch, MessageToStore, PutMessageResult, PutStatus

log = logging.getLogger(__name__)

DLQ_QUEUE_NUMS = 1  # DLQ_NUMS_PER_GROUP
_DELAYABLE = (SysFlag.TRANSACTION_NOT_TYPE, SysFlag.TRANSACTION_COMMIT_TYPE)

PUT_STATUS_CODES = {
    PutStatus.PUT_OK: ResponseCode.SUCCESS,
    PutStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
    PutStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
    PutStatus.MESSAGE_ILLEGAL: ResponseCode.MESSAGE_ILLEGAL,
    PutStatus.PROPERTIES_SIZE_EXCEEDED: ResponseCode.MESSAGE_ILLEGAL,
    PutStatus.DISK_FULL: ResponseCode.SERVICE_NOT_AVAILABLE,
    PutStatus.SERVICE_NOT_AVAILABLE: ResponseCode.SERVICE_NOT_AVAILABLE,
    PutStatus.OS_PAGE_CACHE_BUSY: ResponseCode.SYSTEM_ERROR,
    PutStatus.UNKNOWN_ERROR: ResponseCode.SYSTEM_ERROR,
}


STORED: Final = (
    PutStatus.PUT_OK,
    PutStatus.FLUSH_DISK_TIMEOUT,
    PutStatus.FLUSH_SLAVE_TIMEOUT,
    PutStatus.SLAVE_NOT_AVAILABLE,
)
"""Put outcomes with the messages appended (the answer carries their ids; only the wait fell short)."""

_NOT_LOGGED = (*STORED, PutStatus.DISK_FULL)
"""Put outcomes not logged per request (the store logs a full disk once per episode)."""

# Enum members read per request, bound once (see rocketq.native.modules on enum members)
_PUT_OK: Final = PutStatus.PUT_OK
_SUCCESS: Final = ResponseCode.SUCCESS


def response_code(status: PutStatus) -> int:
    if status is _PUT_OK:  # every good put, without hashing the enum (Enum.__hash__ is Python)
        return _SUCCESS
    return PUT_STATUS_CODES.get(status, ResponseCode.SYSTEM_ERROR)


def redirect_delayed(
    properties: dict[str, str], topic: str, queue_id: int, sys_flag: int, level_count: int
) -> tuple[str, int]:
    """Where a message is stored: a plain or committed message with ``DELAY`` > 0 goes to
    SCHEDULE_TOPIC_XXXX, queue ``level - 1``, with its level clamped to ``level_count`` and its real
    destination saved in ``REAL_TOPIC``/``REAL_QID`` (``properties`` is updated in place); any other
    message (no delay, a prepared or rolled back transaction) stays at ``(topic, queue_id)``."""
    delay = properties.get(Property.DELAY_TIME_LEVEL, "")
    transaction = sys_flag & SysFlag.TRANSACTION_MASK
    if transaction not in _DELAYABLE or not (delay.isdigit() and int(delay) > 0) or level_count <= 0:
        return topic, queue_id
    level = min(int(delay), level_count)
    properties[Property.DELAY_TIME_LEVEL] = str(level)
    properties[Property.REAL_TOPIC] = topic
    properties[Property.REAL_QUEUE_ID] = str(queue_id)
    return SCHEDULE_TOPIC, level - 1


def dead_letter_topic(context: BrokerContext, group: str) -> TopicConfig:
    """``%DLQ%<group>``, created with one queue when missing.

    Its perm is read and write, as in RocketMQ 4.9.8 (older releases made it write-only, so that
    nobody could consume it without ``updateTopic -p 6`` first): an operator, or a consumer that
    subscribes to it explicitly, can pull dead letters without changing the topic.
    """
    config, created = context.topics.create_system_topic(dlq_topic(group), DLQ_QUEUE_NUMS, PERM_READ | PERM_WRITE)
    if created:
        context.request_registration()
    return config


async def put_and_wait(
    context: BrokerContext, messages: Sequence[MessageToStore] | MeasuredBatch, *, wait_for_flush: bool
) -> PutMessageResult:
    """Append ``messages`` (or a wire batch ``MessageStore.measure_batch`` accepted); with SYNC_FLUSH and
    ``wait_for_flush``, also wait for the fsync (the status becomes FLUSH_DISK_TIMEOUT when it takes
    longer than the store's sync flush timeout), and as a SYNC_MASTER for a slave too (``FlushWaits``).
    Puts that wait are appended together with the other waiting puts of the loop iteration
    (``GroupedPuts``). ``put_or_wait`` does the work."""
    outcome = put_or_wait(context, messages, wait_for_flush=wait_for_flush)
    return outcome if isinstance(outcome, PutMessageResult) else await outcome


def put_or_wait(
    context: BrokerContext, messages: Sequence[MessageToStore] | MeasuredBatch, *, wait_for_flush: bool
) -> PutMessageResult | Coroutine[Any, Any, PutMessageResult]:
    """``put_and_wait`` for a caller that answers at once when it can: the result when there is nothing
    to wait for (ASYNC_FLUSH, or the producer does not wait: the put is complete), else a coroutine
    that waits and returns it."""
    waits = wait_for_flush and context.flush_waits.active
    batch: MeasuredBatch | None = None
    plain: Sequence[MessageToStore] = ()
    if isinstance(messages, MeasuredBatch):
        batch, topic = messages, messages.batch.topic
    else:
        plain, topic = messages, messages[0].topic if messages else "?"
    if batch is None and waits and plain:
        return _logged(context.grouped_puts.put_and_wait(plain), topic)
    # alone, after the gathered puts (a producer's messages are stored in the order it sent them)
    context.grouped_puts.put_pending()
    if batch is not None:
        result = context.store.put_batch(batch, dispatch=False)
    else:
        result = context.store.put_messages(plain, dispatch=False)
    if waits and batch is not None:
        context.dispatch.request(at_once=False)
        return _logged(context.flush_waits.wait(result), topic)
    return _put_now(context, result, topic)


def put_one_now(
    context: BrokerContext,
    topic: str,
    queue_id: int,
    body: bytes,
    properties: str,
    flag: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: bytes,
    reconsume_times: int,
) -> PutMessageResult:
    """``put_or_wait`` of one message that waits for nothing, given by its fields (no message object:
    ``MessageStore.put_one``), stored by this broker (its ``store_host``): a send's common case."""
    context.grouped_puts.put_pending()  # (as put_or_wait: after the gathered puts)
    result = context.store.put_one(
        topic, queue_id, body, properties, flag, sys_flag, born_timestamp, born_host, context.store_host,
        reconsume_times, 0, False,
    )  # fmt: skip
    return _put_now(context, result, topic)


def _put_now(context: BrokerContext, result: PutMessageResult, topic: str) -> PutMessageResult:
    """The end of a put that waits for nothing (``put_or_wait``'s, ``put_one_now``'s): what it appended
    dispatched at once (its arrival answers held pulls in this loop turn), a refusal logged."""
    context.dispatch.request(at_once=True)
    if result.status is not _PUT_OK:
        _log_refused(result, topic)
    return result


async def _logged(waiting: Awaitable[PutMessageResult], topic: str) -> PutMessageResult:
    result = await waiting
    _log_refused(result, topic)
    return result


def _log_refused(result: PutMessageResult, topic: str) -> None:
    if result.status not in _NOT_LOGGED:  # (the store logs a full disk)
        log.warning("put to %s refused: %s %s", topic, result.status.value, result.remark)
