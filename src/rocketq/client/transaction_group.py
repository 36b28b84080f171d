"""Grouped transactions (rocketq-only): half messages written by many producers, possibly over many
processes and retried attempts, committed or rolled back together later by anyone, broker by broker.

Each half message carries a transaction-group id (say ``"<queryId>:<batchId>"``) and a part id (say
``"<partition>-<attempt>"``). Nothing is visible until ``commit`` is called on a broker with the parts
to keep and how many messages each must hold there: if one falls short (a lost send) the broker
refuses and changes nothing; otherwise it makes those parts visible in one store put, rolls back every
other part of the group (failed attempts), and remembers the id, so a later commit of the same id
(a replay) only drops what was sent again. Half messages of a group nobody ends are rolled back by
the broker once their immunity time (``immunity_s``) has passed. A broker is atomic for its own
parts; brokers are not atomic with each other: commit on each broker that holds parts.

The producer's group names the transactions: ``commit`` must come from a producer of the same group
(it need not be the one that sent, nor have sent anything: any started ``Producer`` works).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Final

from rocketq.client.errors import MQClientError, RouteNotFoundError, ValidationError, broker_error
from rocketq.client.message import Message, MessageQueue, SendResult
from rocketq.client.producer import Producer
from rocketq.client.send_checks import properties_text, send_request
from rocketq.common.message import Property
from rocketq.common.record import SysFlag
from rocketq.protocol import RequestCode, ResponseCode, make_request
from rocketq.protocol.transactions import (
    EndTransactionGroupRequestHeader,
    TransactionGroupParts,
    TransactionGroupResult,
)
from rocketq.remoting.connection import next_opaque

DEFAULT_IMMUNITY_S: Final = 3600
"""How long a group's half messages wait for its end before the broker rolls them back by default."""


class TransactionGroupError(MQClientError):
    """A commit the broker refused because parts do not hold their messages (nothing changed).
    ``missing``: part -> (expected, pending on the broker)."""

    def __init__(self, message: str, missing: dict[str, tuple[int, int]]) -> None:
        super().__init__(message)
        self.missing = missing


class TransactionGroup:
    """One grouped transaction through ``producer`` (started). Use from the producer's event loop."""

    def __init__(self, producer: Producer, group_id: str, *, immunity_s: int = DEFAULT_IMMUNITY_S) -> None:
        if not group_id:
            raise ValidationError("a transaction group needs an id")
        if immunity_s <= 0:
            raise ValidationError("immunity_s must be positive")
        self.producer = producer
        self.group_id = group_id
        self.immunity_s = immunity_s

    def _properties(self, part: str) -> dict[str, str]:
        if not part:
            raise ValidationError("a part id must not be empty")
        return {
            Property.TRANSACTION_PREPARED: "true",
            Property.PRODUCER_GROUP: self.producer.config.group,
            Property.TRANSACTION_GROUP_ID: self.group_id,
            Property.TRANSACTION_GROUP_PART: part,
            Property.CHECK_IMMUNITY_TIME_IN_SECONDS: str(self.immunity_s),
        }

    async def send(
        self, message: Message, queue: MessageQueue, part: str, *, timeout: float | None = None
    ) -> SendResult:
        """Send ``message`` to ``queue`` as a half message of ``part``; not retried (a second copy would
        make the part's count wrong, which the commit refuses)."""
        producer = self.producer
        if message.delay_level > 0:
            raise ValidationError("a transactional message cannot be delayed")
        tagged = dataclasses.replace(message, properties={**message.properties, **self._properties(part)})
        body, properties, sys_flag, unique_id = producer._prepare(tagged)
        request = send_request(producer._settings, queue, body, properties, sys_flag, message.flag)
        return await producer._send_once(queue, request, unique_id, timeout or producer.config.send_msg_timeout_s)

    async def send_batch(
        self, messages: Sequence[Message], queue: MessageQueue, part: str, *, timeout: float | None = None
    ) -> SendResult:
        """Send ``messages`` (one topic: ``queue``'s) to ``queue`` as half messages of ``part``, in one
        request that the broker stores as it stores a plain batch; not retried."""
        producer = self.producer
        if any(message.topic != queue.topic for message in messages):
            raise ValidationError(f"every message of the batch must be of the queue's topic {queue.topic!r}")
        body, ids = producer._batch_body(messages)
        properties = properties_text(self._properties(part))
        request = send_request(
            producer._settings, queue, body, properties, SysFlag.TRANSACTION_PREPARED_TYPE, 0, batch=True
        )
        timeout_s = timeout or producer.config.send_msg_timeout_s
        return await producer._send_once(queue, request, ",".join(ids), timeout_s)

    async def commit(
        self, broker_name: str, parts: Mapping[str, int], *, timeout: float | None = None
    ) -> TransactionGroupResult:
        """Commit the group on ``broker_name``: ``parts`` (part -> messages it must hold there) become
        visible together, every other part of the group there is rolled back. Calling it again (or
        after a replay) commits nothing more: the result says ``already_committed``.

        Raises:
            TransactionGroupError: A part does not hold its messages; nothing changed.
            BrokerResponseError: The broker refused otherwise (SYSTEM_BUSY: another request is ending
                the group; retry).
        """
        body = TransactionGroupParts(parts=dict(parts)).encode()
        return await self._end(broker_name, SysFlag.TRANSACTION_COMMIT_TYPE, body, timeout)

    async def rollback(self, broker_name: str, *, timeout: float | None = None) -> TransactionGroupResult:
        """Roll back every pending half message of the group on ``broker_name``."""
        return await self._end(broker_name, SysFlag.TRANSACTION_ROLLBACK_TYPE, b"", timeout)

    async def _end(self, broker_name: str, state: int, body: bytes, timeout: float | None) -> TransactionGroupResult:
        producer = self.producer
        fields = EndTransactionGroupRequestHeader(
            producer_group=producer.config.group, transaction_group_id=self.group_id, commit_or_rollback=state
        ).to_ext_fields()
        address = await broker_address(producer, broker_name)
        request = make_request(RequestCode.END_TRANSACTION_GROUP, opaque=next_opaque(), ext_fields=fields, body=body)
        response = await producer.instance.invoke_broker(
            address, request, timeout or producer.config.send_msg_timeout_s
        )
        if response.code == ResponseCode.TRANSACTION_FAILED:
            result = TransactionGroupResult.decode(response.body) if response.body else TransactionGroupResult()
            missing = {row.part: (row.expected, row.pending) for row in result.missing}
            raise TransactionGroupError(
                f"{broker_name} refused to commit {self.group_id!r}: {response.remark}", missing
            )
        if response.code not in (ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT):
            raise broker_error(response.code, response.remark, address)
        return TransactionGroupResult.decode(response.body)


async def broker_address(producer: Producer, broker_name: str) -> str:
    """The master address of ``broker_name``: from the routes the producer knows, else from the name
    servers' cluster table (a process that never sent knows no route)."""
    instance = producer.instance
    address = instance.master_address(broker_name)
    if address is None:
        await instance.update_broker_addresses()
        address = instance.master_address(broker_name)
    if address is None:
        raise RouteNotFoundError(f"broker {broker_name!r} has no master the name servers know of")
    return address


__all__ = ["DEFAULT_IMMUNITY_S", "TransactionGroup", "TransactionGroupError", "TransactionGroupResult"]
