"""What a master serves its slaves' synchronisation (``rocketq.replication.sync``, RocketMQ's
SlaveSynchronize): GET_ALL_CONSUMER_OFFSET (43) and GET_ALL_DELAY_OFFSET (45). The topics (21) and
subscription groups (201) are served by their own modules. And the rocketq-only GET_EPOCH_ENTRIES
(9040): the broker's epoch entries and CommitLog end, which a slave compares with its own before it
follows (``rocketq.replication.epochs``)."""

from __future__ import annotations

import json

from rocketq.broker.context import BrokerContext, reply
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.bodies import ConsumerOffsetSerializeWrapper
from rocketq.remoting import Connection, RequestHandler
from rocketq.replication.epochs import EpochAnswer


def delay_offsets_body(offsets: dict[int, int]) -> bytes:
    """The delay levels' offsets as RocketMQ's delayOffset.json holds them."""
    return json.dumps({"offsetTable": {str(level): offset for level, offset in sorted(offsets.items())}}).encode()


def handlers(context: BrokerContext) -> dict[int, RequestHandler]:
    async def all_consumer_offsets(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        body = ConsumerOffsetSerializeWrapper(offset_table=context.offsets.table()).encode()
        return reply(request, ResponseCode.SUCCESS, body=body)

    async def all_delay_offsets(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        return reply(request, ResponseCode.SUCCESS, body=delay_offsets_body(context.delay_offsets()))

    async def epoch_entries(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        store = context.store
        answer = EpochAnswer(
            entries=[(entry.epoch, entry.start_offset) for entry in store.epochs.entries],
            max_offset=store.commit_log.max_offset,
            master=context.is_master,
        )
        return reply(request, ResponseCode.SUCCESS, body=answer.encode())

    return {
        RequestCode.GET_EPOCH_ENTRIES: epoch_entries,
        RequestCode.GET_ALL_CONSUMER_OFFSET: all_consumer_offsets,
        RequestCode.GET_ALL_DELAY_OFFSET: all_delay_offsets,
    }
