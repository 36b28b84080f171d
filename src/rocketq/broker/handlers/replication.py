"""What a master serves its slaves' synchronisation (``rocketq.replication.sync``, RocketMQ's
SlaveSynchronize): GET_ALL_CONSUMER_OFFSET (43) and GET_ALL_DELAY_OFFSET (45). The topics (21) and
subscription groups (201) are served by their own modules."""

from __future__ import annotations

import json

from rocketq.broker.context import BrokerContext, reply
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.bodies import ConsumerOffsetSerializeWrapper
from rocketq.remoting import Connection, RequestHandler


def delay_offsets_body(offsets: dict[int, int]) -> bytes:
    """The delay levels' offsets as RocketMQ's delayOffset.json holds them."""
    return json.dumps({"offsetTable": {str(level): offset for level, offset in sorted(offsets.items())}}).encode()


def handlers(context: BrokerContext) -> dict[int, RequestHandler]:
    async def all_consumer_offsets(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        body = ConsumerOffsetSerializeWrapper(offset_table=context.offsets.table()).encode()
        return reply(request, ResponseCode.SUCCESS, body=body)

    async def all_delay_offsets(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        return reply(request, ResponseCode.SUCCESS, body=delay_offsets_body(context.delay_offsets()))

    return {
        RequestCode.GET_ALL_CONSUMER_OFFSET: all_consumer_offsets,
        RequestCode.GET_ALL_DELAY_OFFSET: all_delay_offsets,
    }
