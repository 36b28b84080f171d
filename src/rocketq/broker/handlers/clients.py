"""HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38), CHECK_CLIENT_CONFIG (46);
NOTIFY_CONSUMER_IDS_CHANGED (40) sent to a group's members when its membership changes
(ClientManageProcessor).

A heartbeat carrying a SQL92 subscription the broker cannot take (``enablePropertyFilter=false``, or an
expression that does not parse) is refused whole, with the reason in the remark, and changes nothing;
RocketMQ's broker would drop such a subscription silently and fail the pulls later.
"""

from __future__ import annotations

import asyncio
import logging
import time

from rocketq.broker.client_manager import ClientChannel, build_subscription
from rocketq.broker.consumer_filters import SqlSubscription
from rocketq.broker.context import BrokerContext, parsed, reply
from rocketq.broker.sql_filters import refusal
from rocketq.common.group_topics import retry_topic
from rocketq.protocol import (
    ConsumerListBody,
    HeartbeatData,
    ProtocolError,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    make_request,
)
from rocketq.protocol.bodies import CheckClientRequestBody
from rocketq.protocol.headers import GetConsumerListByGroupRequestHeader, UnregisterClientRequestHeader
from rocketq.remoting import Connection, RequestHandler
from rocketq.remoting.connection import next_opaque

log = logging.getLogger(__name__)

REGISTER_WAIT_S = 1.0
"""How long a heartbeat that created a retry topic waits for the name servers to learn it."""


async def _registered(context: BrokerContext) -> None:
    """Register with the name servers now and wait up to ``REGISTER_WAIT_S`` for it (a name server that
    does not answer must not hold the heartbeat up; the registration goes on without it): the member asks
    for its retry topic's route right after its heartbeats, and must find this broker there."""
    registration = asyncio.ensure_future(context.register_now())
    context.background.add(registration)
    registration.add_done_callback(context.background.discard)
    await asyncio.wait({registration}, timeout=REGISTER_WAIT_S)


def notify_group_changed(context: BrokerContext, group: str) -> None:
    """Tell every member of ``group`` to rebalance now (oneway, best effort)."""
    config = context.groups.table.get(group)
    if not context.config.notify_consumer_ids_changed_enable or (
        config and not config.notify_consumer_ids_changed_enable
    ):
        return
    for channel in context.clients.channels_of(group):
        if isinstance(channel, Connection) and channel.is_open:
            try:
                channel.send(
                    make_request(
                        RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
                        opaque=next_opaque(),
                        ext_fields={"consumerGroup": group},
                        oneway=True,
                    )
                )
            except Exception:
                log.warning("cannot notify %s of group %s change", channel.remote_address, group)


def handlers(context: BrokerContext) -> dict[int, RequestHandler]:
    clients = context.clients

    async def heartbeat(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        try:
            data = HeartbeatData.decode(request.body)
        except ProtocolError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"bad heartbeat body: {exc}")
        for consumer in data.consumer_data_set:
            for wanted in consumer.subscription_data_set:
                refused = refusal(context.config, wanted.expression_type or "TAG", wanted.sub_string)
                if refused is not None:
                    code, remark = refused
                    log.warning(
                        "heartbeat of %s refused: %s on %s: %s",
                        data.client_id,
                        consumer.group_name,
                        wanted.topic,
                        remark,
                    )
                    return reply(request, code, f"subscription of {consumer.group_name} to {wanted.topic}: {remark}")
        now = time.monotonic()
        channel = ClientChannel(data.client_id, connection, request.language.name, request.version, now)
        connection.attributes["client_id"] = data.client_id
        registered_topics = False
        for consumer in data.consumer_data_set:
            group_config = context.groups.find(consumer.group_name)
            if group_config is None:
                continue
            _, created = context.topics.create_system_topic(
                retry_topic(consumer.group_name), group_config.retry_queue_nums
            )
            registered_topics = registered_topics or created
            subscriptions = [
                build_subscription(s.topic, s.sub_string, s.sub_version, s.expression_type or "TAG")
                for s in consumer.subscription_data_set
            ]
            changed = clients.register_consumer(
                consumer.group_name,
                channel,
                consume_type=consumer.consume_type.value,
                message_model=consumer.message_model.value,
                consume_from_where=consumer.consume_from_where.value,
                subscriptions=subscriptions,
            )
            context.filters.register(
                consumer.group_name,
                [SqlSubscription(s.topic, s.expression, s.expression_type, s.sub_version) for s in subscriptions],
            )
            if changed:
                log.info(
                    "consumer %s joined group %s from %s",
                    data.client_id,
                    consumer.group_name,
                    connection.remote_address,
                )
                notify_group_changed(context, consumer.group_name)
        for producer in data.producer_data_set:
            clients.register_producer(producer.group_name, channel)
        if registered_topics:  # a group's retry topic is new here: routed before the member asks for it
            await _registered(context)
        if context.filters.changed:  # written before the dispatcher uses it: see ConsumerFilterManager
            await asyncio.to_thread(context.filters.persist)
        return reply(request, ResponseCode.SUCCESS)

    def unregister(request: RemotingCommand, header: UnregisterClientRequestHeader) -> RemotingCommand:
        for group in clients.unregister(header.client_id, header.producer_group, header.consumer_group):
            log.info("client %s left group %s", header.client_id, group)
            notify_group_changed(context, group)
            if group not in clients.consumers:
                context.filters.unregister(group)
        return reply(request, ResponseCode.SUCCESS)

    async def check_client_config(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        """Whether this broker can filter by the body's subscription (Java clients ask at subscribe)."""
        try:
            body = CheckClientRequestBody.decode(request.body)
        except ProtocolError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"bad check-client body: {exc}")
        wanted = body.subscription_data
        refused = (
            None if wanted is None else refusal(context.config, wanted.expression_type or "TAG", wanted.sub_string)
        )
        return reply(request, ResponseCode.SUCCESS) if refused is None else reply(request, *refused)

    def consumer_list(request: RemotingCommand, header: GetConsumerListByGroupRequestHeader) -> RemotingCommand:
        ids = clients.consumer_ids(header.consumer_group)
        if not ids:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {header.consumer_group}")
        return reply(request, ResponseCode.SUCCESS, body=ConsumerListBody(consumer_id_list=ids).encode())

    return {
        RequestCode.HEART_BEAT: heartbeat,
        RequestCode.UNREGISTER_CLIENT: parsed(UnregisterClientRequestHeader, unregister),
        RequestCode.GET_CONSUMER_LIST_BY_GROUP: parsed(GetConsumerListByGroupRequestHeader, consumer_list),
        RequestCode.CHECK_CLIENT_CONFIG: check_client_config,
    }
