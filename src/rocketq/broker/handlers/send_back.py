"""CONSUMER_SEND_MSG_BACK (36): a consumer hands back a message it failed to consume
(SendMessageProcessor.consumerSendMsgBack).

The broker stores a copy for ``%RETRY%<group>``, delayed through SCHEDULE_TOPIC_XXXX so that the
schedule service delivers it later, or for ``%DLQ%<group>`` at once (see :mod:`rocketq.broker.retry`).
"""

from __future__ import annotations

import logging
import random

from rocketq.broker.context import BrokerContext, parsed, reply
from rocketq.broker.message_put import dead_letter_topic, put_and_wait, redirect_delayed, response_code
from rocketq.broker.retry import V3_4_9, plan_send_back, send_back_properties
from rocketq.broker.topic_config import PERM_READ, PERM_WRITE, is_writeable
from rocketq.common.group_topics import retry_topic
from rocketq.common.message import decode_properties, encode_properties
from rocketq.common.message_id import offset_message_id
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.headers import ConsumerSendMsgBackRequestHeader
from rocketq.remoting import RequestHandler
from rocketq.store import MessageToStore, PutStatus

log = logging.getLogger(__name__)


def handlers(context: BrokerContext) -> dict[int, RequestHandler]:
    async def send_back(request: RemotingCommand, header: ConsumerSendMsgBackRequestHeader) -> RemotingCommand:
        config = context.config
        log.debug(
            "send-back of the message at %d for group %s, delay level %d",
            header.offset,
            header.group,
            header.delay_level,
        )
        if not context.is_master:
            return reply(request, ResponseCode.SERVICE_NOT_AVAILABLE, f"broker {config.broker_name} is a slave")
        group_config = context.groups.find(header.group)
        if group_config is None:
            return reply(
                request,
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{header.group}] does not exist",
            )
        if group_config.retry_queue_nums <= 0:  # the group wants no retries: the message is dropped
            log.info("group %s has no retry queues: message at %d not retried", header.group, header.offset)
            return reply(request, ResponseCode.SUCCESS)
        record = context.store.lookup_message(header.offset)
        if record is None:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"no message at commit log offset {header.offset}")

        max_times = group_config.retry_max_times
        if request.version >= V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        plan = plan_send_back(record.reconsume_times, header.delay_level, max_times)
        if plan.dead_letter:
            topic_config = dead_letter_topic(context, header.group)
            log.info(
                "message at %d of group %s (reconsumed %d times, delay level %d) goes to %s",
                header.offset,
                header.group,
                record.reconsume_times,
                header.delay_level,
                topic_config.topic_name,
            )
        else:
            topic_config, created = context.topics.create_system_topic(
                retry_topic(header.group), group_config.retry_queue_nums, PERM_READ | PERM_WRITE
            )
            if created:
                context.request_registration()
        if not is_writeable(topic_config.perm):
            return reply(
                request,
                ResponseCode.NO_PERMISSION,
                f"the topic[{topic_config.topic_name}] sending message is forbidden",
            )

        original_id = offset_message_id(record.store_host, record.physical_offset)
        properties = send_back_properties(decode_properties(record.properties), record.topic, original_id, plan)
        queue_id = random.randrange(max(1, topic_config.write_queue_nums))
        target_topic, target_queue = redirect_delayed(
            properties,
            topic_config.topic_name,
            queue_id,
            record.sys_flag,
            len(context.store.config.delay_levels_ms()),
        )
        message = MessageToStore(
            topic=target_topic,
            queue_id=target_queue,
            body=record.body,
            properties=encode_properties(properties),
            flag=record.flag,
            sys_flag=record.sys_flag,
            born_timestamp=record.born_timestamp,
            born_host=record.born_host,
            store_host=context.store_host,
            reconsume_times=plan.reconsume_times,
        )
        result = await put_and_wait(context, [message], wait_for_flush=False)
        if result.status is not PutStatus.PUT_OK:
            return reply(request, response_code(result.status), result.remark or result.status.value)
        return reply(request, ResponseCode.SUCCESS)

    return {RequestCode.CONSUMER_SEND_MSG_BACK: parsed(ConsumerSendMsgBackRequestHeader, send_back)}
