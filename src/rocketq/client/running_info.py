"""A consumer's answer to GET_CONSUMER_RUNNING_INFO (307): its settings, real subscriptions, the state
of each assigned queue, and its pull and consume rates per topic (counted by
``rocketq.client.consume_stats.ConsumerStats``).
"""

from __future__ import annotations

import sys
import threading
import traceback
from typing import TYPE_CHECKING

from rocketq.client.message import decode_messages
from rocketq.protocol import RemotingCommand, ResponseCode, make_response
from rocketq.protocol.errors import RemoteProtocolError
from rocketq.protocol.running_info import (
    PROP_CLIENT_VERSION,
    PROP_CONSUME_ORDERLY,
    PROP_CONSUME_TYPE,
    PROP_CONSUMER_START_TIMESTAMP,
    PROP_NAMESERVER_ADDR,
    PROP_THREADPOOL_CORE_SIZE,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    GetConsumerRunningInfoRequestHeader,
    ProcessQueueInfo,
)

if TYPE_CHECKING:
    from rocketq.client.consumer_core import ConsumerCore
    from rocketq.client.process_queue import ProcessQueue

VERSION_DESC = "V4_9_8"
"""RocketMQ's name of the client version rocketq announces (MQVersion ordinal 409)."""


def thread_stacks() -> str:
    """Every thread's stack, as ``jstack`` shows a JVM's (what ``consumerStatus -s`` asks for)."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    parts = []
    for ident, frame in sys._current_frames().items():
        parts.append(f'"{names.get(ident, "?")}" ident={ident}\n' + "".join(traceback.format_stack(frame)))
    return "\n".join(parts)


def running_info(core: ConsumerCore, *, jstack: bool = False) -> ConsumerRunningInfo:
    """What ``core``'s consumer is doing now, as Java's ConsumerRunningInfo says it."""
    config = core.config
    properties = {
        PROP_NAMESERVER_ADDR: config.client.namesrv_addr,
        PROP_CONSUME_TYPE: core.consume_type,
        PROP_CONSUME_ORDERLY: str(core.orderly).lower(),
        PROP_THREADPOOL_CORE_SIZE: str(config.consume_thread_min),
        PROP_CONSUMER_START_TIMESTAMP: str(core.started_ms),
        PROP_CLIENT_VERSION: VERSION_DESC,
        "consumerGroup": config.group,
        "messageModel": config.message_model.value,
        "consumeFromWhere": config.consume_from_where.value,
        "allocateMessageQueueStrategy": config.allocate_strategy,
        "pullBatchSize": str(config.pull_batch_size),
        "consumeMessageBatchMaxSize": str(config.consume_message_batch_max_size),
        "consumeThreadMin": str(config.consume_thread_min),
        "consumeThreadMax": str(config.consume_thread_max),
    }
    topics = sorted(core.subscriptions)
    return ConsumerRunningInfo(
        properties=properties,
        subscription_set=[core.subscription(topic) for topic in topics],
        mq_table=core.queue_infos(),
        status_table={topic: core.stats.status(topic) for topic in topics},
        jstack=thread_stacks() if jstack else None,
    )


def running_info_response(core: ConsumerCore, request: RemotingCommand) -> RemotingCommand:
    try:
        header = GetConsumerRunningInfoRequestHeader.from_ext_fields(request.ext_fields)
    except RemoteProtocolError as exc:
        return make_response(request, ResponseCode.SYSTEM_ERROR, str(exc))
    if header.consumer_group != core.config.group:
        return make_response(
            request, ResponseCode.SYSTEM_ERROR, f"this client has no consumer group {header.consumer_group}"
        )
    body = running_info(core, jstack=header.jstack_enable).encode()
    return make_response(request, ResponseCode.SUCCESS, body=body)


async def consume_directly_response(core: ConsumerCore, request: RemotingCommand) -> RemotingCommand:
    """The message in the request's body through the consumer's listener, as RocketMQ's push consumers
    do for ``consumeMessage``; the answer says how it went (its offset is not committed)."""
    messages = decode_messages(request.body)
    if core.consume_directly is None or len(messages) != 1:
        reason = "a pull consumer has no listener" if core.consume_directly is None else "no message in the request"
        return make_response(request, ResponseCode.SYSTEM_ERROR, f"cannot consume the message directly: {reason}")
    result = await core.consume_directly(messages[0])
    return make_response(request, ResponseCode.SUCCESS, body=result.encode())


def process_queue_info(process: ProcessQueue, commit_offset: int) -> ProcessQueueInfo:
    """One assigned queue of a push consumer, as Java's ProcessQueueInfo describes it."""
    first = process.first_cached_offset()
    return ProcessQueueInfo(
        commit_offset=commit_offset,
        cached_msg_min_offset=max(first, 0),
        cached_msg_max_offset=max(process.max_offset, 0) if first >= 0 else 0,
        cached_msg_count=process.count,
        cached_msg_size_in_mi_b=process.cached_bytes // (1024 * 1024),
        locked=process.locked,
        droped=process.dropped,
        last_pull_timestamp=process.last_pull_ms,
        last_consume_timestamp=process.last_consume_ms,
    )


def directly_result(failed: bool, orderly: bool, spent_s: float) -> ConsumeMessageDirectlyResult:
    """How a listener's call on one message went, as ConsumeMessageDirectlyResult says it."""
    return ConsumeMessageDirectlyResult(
        order=orderly,
        auto_commit=True,
        consume_result="CR_LATER" if failed else "CR_SUCCESS",
        remark="the listener asked for a redelivery or raised" if failed else None,
        spent_time_mills=int(spent_s * 1000),
    )
