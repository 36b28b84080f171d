"""QueueLocks: an orderly consumer's locks on its queues, held on each queue's master broker.

LOCK_BATCH_MQ locks (or renews) a set of queues for this client in its group; the broker answers
with the ones it now holds, the others being held by another member whose lock has not expired
(60 s unrenewed). UNLOCK_BATCH_MQ lets queues go. One request per broker, for that broker's queues.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from rocketq.client.consumer_core import ConsumerCore
from rocketq.client.message import MessageQueue
from rocketq.protocol import LockBatchRequestBody, LockBatchResponseBody, RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol import MessageQueue as WireQueue
from rocketq.protocol.bodies import UnlockBatchRequestBody
from rocketq.protocol.command import make_request
from rocketq.remoting import RemotingError
from rocketq.remoting.connection import next_opaque

log = logging.getLogger(__name__)


class QueueLocks:
    def __init__(self, core: ConsumerCore) -> None:
        self._core = core
        self.held: set[MessageQueue] = set()  # as the brokers last answered

    async def lock(self, queues: Sequence[MessageQueue]) -> set[MessageQueue]:
        """Lock or renew ``queues``; returns those this client now holds (and records them in ``held``)."""
        now_held: set[MessageQueue] = set()
        for response in await self._per_broker(RequestCode.LOCK_BATCH_MQ, LockBatchRequestBody, queues):
            if response.code == ResponseCode.SUCCESS:
                for wire in LockBatchResponseBody.decode(response.body).lock_ok_mq_set:
                    now_held.add(MessageQueue(wire.topic, wire.broker_name, wire.queue_id))
        self.held = (self.held - set(queues)) | now_held
        return now_held

    async def unlock(self, queues: Iterable[MessageQueue]) -> None:
        queues = list(queues)
        await self._per_broker(RequestCode.UNLOCK_BATCH_MQ, UnlockBatchRequestBody, queues)
        self.held -= set(queues)

    async def _per_broker(
        self,
        code: int,
        body_type: type[LockBatchRequestBody] | type[UnlockBatchRequestBody],
        queues: Sequence[MessageQueue],
    ) -> list[RemotingCommand]:
        """One request per master broker for its queues; the responses that came."""
        core = self._core
        by_broker: dict[str, list[MessageQueue]] = {}
        for queue in queues:
            by_broker.setdefault(queue.broker_name, []).append(queue)
        responses = []
        for broker_name, group in by_broker.items():
            address = core.instance.master_address(broker_name)
            if address is None:
                continue
            body = body_type(
                consumer_group=core.config.group,
                client_id=core.instance.client_id,
                mq_set=[WireQueue(topic=q.topic, broker_name=q.broker_name, queue_id=q.queue_id) for q in group],
            ).encode()
            request = make_request(code, opaque=next_opaque(), body=body)
            try:
                responses.append(
                    await core.instance.invoke_broker(address, request, core.config.client.request_timeout_s)
                )
            except RemotingError as exc:
                log.info("request %d about queues on %s failed: %s", code, broker_name, exc)
        return responses
