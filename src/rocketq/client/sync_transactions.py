"""Blocking twins of ``TransactionProducer`` and ``TransactionGroup`` (``rocketq.client.sync``'s way:
the async client runs on a private event-loop thread). A plain-function callback runs in a thread of
that loop's pool, a coroutine function on the loop."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from rocketq.client.config import ProducerConfig
from rocketq.client.message import Message, MessageQueue, SendResult
from rocketq.client.producer import Producer
from rocketq.client.sync import LoopThread, SyncProducer
from rocketq.client.transaction_group import TransactionGroup
from rocketq.client.transactions import (
    LocalTransaction,
    TransactionCheck,
    TransactionProducer,
    TransactionSendResult,
)
from rocketq.protocol.transactions import TransactionGroupResult


class SyncTransactionProducer(SyncProducer):
    """Blocking twin of ``TransactionProducer``: ``Producer``'s methods and ``send_message_in_transaction``."""

    def __init__(
        self,
        config: ProducerConfig | None = None,
        *,
        local_transaction: LocalTransaction,
        check: TransactionCheck,
        group: str | None = None,
        namesrv_addr: str | None = None,
    ) -> None:
        self._callbacks = (local_transaction, check)
        super().__init__(config, group=group, namesrv_addr=namesrv_addr)

    def _make_producer(self, config: ProducerConfig | None, group: str | None, namesrv_addr: str | None) -> Producer:
        local_transaction, check = self._callbacks
        return TransactionProducer(
            config, local_transaction=local_transaction, check=check, group=group, namesrv_addr=namesrv_addr
        )

    def send_message_in_transaction(
        self, message: Message, arg: Any = None, *, timeout: float | None = None
    ) -> TransactionSendResult:
        """Send ``message`` as a half message, run the local transaction with ``arg`` and end the
        transaction with its answer (``TransactionProducer.send_message_in_transaction``)."""
        producer = cast(TransactionProducer, self._producer)
        return self._loop.call(producer.send_message_in_transaction(message, arg, timeout=timeout))


class SyncTransactionGroup:
    """Blocking twin of ``TransactionGroup``; made by ``SyncProducer.transaction_group``."""

    def __init__(self, loop: LoopThread, group: TransactionGroup) -> None:
        self._loop = loop
        self._group = group

    @property
    def group_id(self) -> str:
        return self._group.group_id

    def send(self, message: Message, queue: MessageQueue, part: str, *, timeout: float | None = None) -> SendResult:
        return self._loop.call(self._group.send(message, queue, part, timeout=timeout))

    def send_batch(
        self, messages: Sequence[Message], queue: MessageQueue, part: str, *, timeout: float | None = None
    ) -> SendResult:
        return self._loop.call(self._group.send_batch(messages, queue, part, timeout=timeout))

    def commit(
        self, broker_name: str, parts: Mapping[str, int], *, timeout: float | None = None
    ) -> TransactionGroupResult:
        return self._loop.call(self._group.commit(broker_name, parts, timeout=timeout))

    def rollback(self, broker_name: str, *, timeout: float | None = None) -> TransactionGroupResult:
        return self._loop.call(self._group.rollback(broker_name, timeout=timeout))
