"""LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42): queue locks of orderly consumers (AdminBrokerProcessor
lockBatchMQ / unlockBatchMQ over RebalanceLockManager, docs/protocol.md#lock_batch_mq-41-and-unlock_batch_mq-42)."""

from __future__ import annotations

import logging

from rocketq.broker.context import BrokerContext, reply
from rocketq.protocol import ProtocolError, RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.bodies import LockBatchRequestBody, LockBatchResponseBody, UnlockBatchRequestBody
from rocketq.remoting import Connection, RequestHandler

log = logging.getLogger(__name__)


def handlers(context: BrokerContext) -> dict[int, RequestHandler]:
    locks = context.locks
    clock = context.clock  # the leases' time (tests move a FakeClock)

    def _now_ms() -> int:
        return int(clock.time() * 1000)

    async def lock_batch(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        try:
            body = LockBatchRequestBody.decode(request.body)
        except ProtocolError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"bad lock request body: {exc}")
        held = locks.try_lock_batch(body.consumer_group, body.client_id, body.mq_set, _now_ms())
        if len(held) < len(body.mq_set):
            log.info(
                "group %s: client %s got %d of the %d queues it asked to lock",
                body.consumer_group,
                body.client_id,
                len(held),
                len(body.mq_set),
            )
        return reply(request, ResponseCode.SUCCESS, body=LockBatchResponseBody(lock_ok_mq_set=held).encode())

    async def unlock_batch(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        try:
            body = UnlockBatchRequestBody.decode(request.body)
        except ProtocolError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"bad unlock request body: {exc}")
        locks.unlock_batch(body.consumer_group, body.client_id, body.mq_set)
        return reply(request, ResponseCode.SUCCESS)

    return {RequestCode.LOCK_BATCH_MQ: lock_batch, RequestCode.UNLOCK_BATCH_MQ: unlock_batch}
