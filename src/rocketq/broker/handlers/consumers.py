"""Consumer group administration: GET_CONSUMER_CONNECTION_LIST (203), GET_CONSUME_STATS (208),
QUERY_TOPIC_CONSUME_BY_WHO (300) and INVOKE_BROKER_TO_RESET_OFFSET (222), which also sends
RESET_CONSUMER_CLIENT_OFFSET (220) to the group's members (AdminBrokerProcessor, Broker2Client).

Java keys the ``offsetTable`` maps of the 208 and 222 bodies by MessageQueue objects, written as JSON
objects used as keys (fastjson's way); rocketq writes them so, for Java's mqadmin and clients
(:class:`rocketq.protocol.bodies.ConsumeStats`, :class:`rocketq.protocol.bodies.ResetOffsetBody`).
RESET_CONSUMER_CLIENT_OFFSET goes to each member in its own language's form, as a Java broker sends
it: C++ clients get the list ``ResetOffsetBodyForC`` (the official C++ consumer follows it, tested in
tests/compat), every other client the map.
"""

from __future__ import annotations

import logging
import time

from rocketq.broker.client_manager import ClientChannel, ConsumerGroup, Subscription
from rocketq.broker.context import BrokerContext, parsed, reply
from rocketq.common.group_topics import retry_topic
from rocketq.common.message import tags_hash_code
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode, make_request
from rocketq.protocol.bodies import (
    ClientConnection,
    ConsumeFromWhere,
    ConsumerConnection,
    ConsumeStats,
    ConsumeType,
    GroupList,
    MessageModel,
    MessageQueueOffset,
    QueueConsumeStats,
    ResetOffsetBody,
    SubscriptionData,
)
from rocketq.protocol.headers import (
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketq.remoting import Connection, RequestHandler
from rocketq.remoting.connection import next_opaque

log = logging.getLogger(__name__)

RESET_TO_END = -1  # a reset timestamp of -1 means each queue's max offset


def subscription_data(subscription: Subscription) -> SubscriptionData:
    tags = sorted(subscription.tags)
    return SubscriptionData(
        topic=subscription.topic,
        sub_string=subscription.expression,
        sub_version=subscription.sub_version,
        tags_set=tags,
        code_set=[tags_hash_code(tag) for tag in tags],
        expression_type=subscription.expression_type,
    )


def client_connection(channel: ClientChannel) -> ClientConnection:
    """Java's ClientConnection of a producer's or consumer's channel."""
    return ClientConnection(
        client_id=channel.client_id,
        client_addr=str(getattr(channel.channel, "remote_address", "")),
        language=channel.language,
        version=channel.version,
    )


def consumer_connection(group: ConsumerGroup) -> ConsumerConnection:
    """Java's ConsumerConnection for a group's current members and subscriptions."""
    connections = [client_connection(channel) for channel in group.channels.values()]
    return ConsumerConnection(
        connection_set=sorted(connections, key=lambda c: (c.client_id, c.client_addr)),
        subscription_table={topic: subscription_data(s) for topic, s in sorted(group.subscriptions.items())},
        consume_type=ConsumeType(group.consume_type),
        message_model=MessageModel(group.message_model),
        consume_from_where=ConsumeFromWhere(group.consume_from_where),
    )


def handlers(context: BrokerContext) -> dict[int, RequestHandler]:
    store, offsets, broker_name = context.store, context.offsets, context.config.broker_name

    def connection_list(request: RemotingCommand, header: GetConsumerConnectionListRequestHeader) -> RemotingCommand:
        group = context.clients.consumers.get(header.consumer_group)
        if group is None or not group.channels:
            return reply(
                request, ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{header.consumer_group}] not online"
            )
        return reply(request, ResponseCode.SUCCESS, body=consumer_connection(group).encode())

    def queue_stats(group: str, topic: str, queue_id: int) -> QueueConsumeStats:
        consumer_offset = max(0, offsets.query(group, topic, queue_id) or 0)
        last = store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1) if consumer_offset else None
        return QueueConsumeStats(
            topic=topic,
            broker_name=broker_name,
            queue_id=queue_id,
            broker_offset=max(0, store.get_max_offset_in_queue(topic, queue_id)),
            consumer_offset=consumer_offset,
            last_timestamp=last or 0,
        )

    def consume_stats(request: RemotingCommand, header: GetConsumeStatsRequestHeader) -> RemotingCommand:
        group = header.consumer_group
        if header.topic:
            topics = [header.topic]
        else:
            topics = offsets.topics_of_group(group)
            if retry_topic(group) not in topics:
                topics.append(retry_topic(group))
        table: list[QueueConsumeStats] = []
        for topic in topics:
            topic_config = context.topics.get(topic)
            if topic_config is None:
                continue
            table.extend(queue_stats(group, topic, queue_id) for queue_id in range(topic_config.read_queue_nums))
        now = time.monotonic()  # consumeTps: what the group took from these topics in the last minute
        tps = sum(context.consume_rates.tps(group, topic, now) for topic in topics)
        return reply(request, ResponseCode.SUCCESS, body=ConsumeStats(offset_table=table, consume_tps=tps).encode())

    def reset_offset(request: RemotingCommand, header: ResetOffsetRequestHeader) -> RemotingCommand:
        topic_config = context.topics.get(header.topic)
        if topic_config is None:
            return reply(request, ResponseCode.TOPIC_NOT_EXIST, f"[reset offset] topic[{header.topic}] not exist")
        table = []
        for queue_id in range(topic_config.read_queue_nums):
            current = offsets.query(header.group, header.topic, queue_id)
            if header.timestamp == RESET_TO_END:
                wanted = store.get_max_offset_in_queue(header.topic, queue_id)
            else:
                wanted = store.get_offset_by_timestamp(header.topic, queue_id, header.timestamp)
            # Like Java: unless forced, an offset only moves back; a queue never committed takes the new one.
            offset = wanted if header.is_force or current is None or wanted < current else current
            if offset != current:
                offsets.commit(header.group, header.topic, queue_id, offset)
            table.append(
                MessageQueueOffset(topic=header.topic, broker_name=broker_name, queue_id=queue_id, offset=offset)
            )
        reset = ResetOffsetBody(offset_table=table)
        notified = _notify_reset(context, header, reset)
        log.info(
            "offsets of group %s on %s reset to time %d (force=%s): %s; %d members told",
            header.group,
            header.topic,
            header.timestamp,
            header.is_force,
            {entry.queue_id: entry.offset for entry in table},
            notified,
        )
        return reply(request, ResponseCode.SUCCESS, body=reset.encode())

    def consumed_by(request: RemotingCommand, header: QueryTopicConsumeByWhoRequestHeader) -> RemotingCommand:
        """Groups with a member subscribed to the topic now, or with offsets committed for it."""
        online = {group for group, info in context.clients.consumers.items() if header.topic in info.subscriptions}
        groups = sorted(online.union(context.offsets.groups_of_topic(header.topic)))
        return reply(request, ResponseCode.SUCCESS, body=GroupList(group_list=groups).encode())

    return {
        RequestCode.GET_CONSUMER_CONNECTION_LIST: parsed(GetConsumerConnectionListRequestHeader, connection_list),
        RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: parsed(QueryTopicConsumeByWhoRequestHeader, consumed_by),
        RequestCode.GET_CONSUME_STATS: parsed(GetConsumeStatsRequestHeader, consume_stats),
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: parsed(ResetOffsetRequestHeader, reset_offset),
    }


def _notify_reset(context: BrokerContext, header: ResetOffsetRequestHeader, reset: ResetOffsetBody) -> int:
    """Send RESET_CONSUMER_CLIENT_OFFSET (oneway, best effort) to every member of the group, in the
    body form of its language; returns how many channels it was written to."""
    fields = header.to_ext_fields()
    group = context.clients.consumers.get(header.group)
    bodies: dict[bool, bytes] = {}  # for C++ or not
    sent = 0
    for member in group.channels.values() if group is not None else []:
        channel = member.channel
        if not isinstance(channel, Connection) or not channel.is_open:
            continue
        for_c = member.language == "CPP"
        if for_c not in bodies:
            bodies[for_c] = reset.encode_for_c() if for_c else reset.encode()
        request = make_request(
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
            opaque=next_opaque(),
            ext_fields=fields,
            body=bodies[for_c],
            oneway=True,
        )
        try:
            channel.send(request)
        except Exception:
            log.warning("cannot tell %s to reset the offsets of group %s", channel.remote_address, header.group)
            continue
        sent += 1
    return sent
