"""Admin requests a broker passes on to one member of a consumer group, on that member's own
connection, and whose answer it returns (RocketMQ's Broker2Client.callClient):
GET_CONSUMER_RUNNING_INFO (307, ``consumerStatus``) and CONSUME_MESSAGE_DIRECTLY (309,
``consumeMessage``: the broker reads the message its offset id names and sends it along as the body).

A member that is not connected to this broker, a message that is not here, or a member that does not
answer in time each get a SYSTEM_ERROR naming what is missing.
"""

from __future__ import annotations

import asyncio
import logging

from rocketq.broker.context import BrokerContext, parsed, reply
from rocketq.common.message_id import MessageIdError, parse_offset_message_id
from rocketq.common.record import encode_record
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode, make_request
from rocketq.protocol.running_info import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
)
from rocketq.remoting import Connection, RemotingError, RequestHandler
from rocketq.remoting.connection import next_opaque

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 5.0
"""How long the broker waits for the member's answer (RocketMQ: 5 s)."""


def handlers(context: BrokerContext) -> dict[int, RequestHandler]:
    def member(group: str, client_id: str) -> Connection | None:
        members = context.clients.consumers.get(group)
        for channel in members.channels.values() if members is not None else []:
            if channel.client_id == client_id and isinstance(channel.channel, Connection) and channel.channel.is_open:
                return channel.channel
        return None

    async def call(request: RemotingCommand, group: str, client_id: str, body: bytes) -> RemotingCommand:
        connection = member(group, client_id)
        if connection is None:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online")
        forwarded = make_request(request.code, opaque=next_opaque(), ext_fields=dict(request.ext_fields), body=body)
        try:
            answer = await connection.invoke(forwarded, CALL_TIMEOUT_S)
        except (TimeoutError, RemotingError) as exc:
            log.info("consumer %s of group %s did not answer request %d: %s", client_id, group, request.code, exc)
            return reply(request, ResponseCode.SYSTEM_ERROR, f"consumer <{client_id}> did not answer: {exc}")
        return reply(request, answer.code, answer.remark, body=bytes(answer.body))

    async def running_info(request: RemotingCommand, header: GetConsumerRunningInfoRequestHeader) -> RemotingCommand:
        return await call(request, header.consumer_group, header.client_id, b"")

    async def consume_directly(
        request: RemotingCommand, header: ConsumeMessageDirectlyResultRequestHeader
    ) -> RemotingCommand:
        try:
            _, _, offset = parse_offset_message_id(header.msg_id or "")
        except MessageIdError:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"{header.msg_id!r} is not an offset message id")
        record = await asyncio.to_thread(context.store.lookup_message, offset)
        if record is None:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"no message {header.msg_id} on this broker")
        return await call(request, header.consumer_group, header.client_id or "", encode_record(record))

    return {
        RequestCode.GET_CONSUMER_RUNNING_INFO: parsed(GetConsumerRunningInfoRequestHeader, running_info),
        RequestCode.CONSUME_MESSAGE_DIRECTLY: parsed(ConsumeMessageDirectlyResultRequestHeader, consume_directly),
    }
