"""Transactional messages (RocketMQ's TransactionMQProducer): a half message, a local transaction, and
the commit or rollback of the half message by its outcome.

``send_message_in_transaction(message, arg)`` sends ``message`` as a half message (invisible to
consumers), runs the local-transaction callback with ``(message, arg)`` and ends the transaction with
END_TRANSACTION (oneway, as RocketMQ's clients send it) by the state it returns: COMMIT makes the
message visible, ROLLBACK drops it, UNKNOWN (or an exception) leaves it to the broker, which later
asks a producer of the group with CHECK_TRANSACTION_STATE; the check callback answers with the
transaction's state. Both callbacks may be plain functions (run in a thread, off the event loop) or
coroutine functions (awaited on it).
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mypy_extensions import mypyc_attr

from rocketq.client.config import ProducerConfig
from rocketq.client.errors import MQClientError, ValidationError
from rocketq.client.message import Message, MessageExt, MessageQueue, SendResult, SendStatus, decode_messages
from rocketq.client.producer import Producer
from rocketq.client.producer_sends import master_address
from rocketq.common.message import Property
from rocketq.common.message_id import parse_offset_message_id
from rocketq.common.record import SysFlag
from rocketq.protocol import ProtocolError, RemotingCommand, RequestCode, make_request
from rocketq.protocol.headers import CheckTransactionStateRequestHeader
from rocketq.remoting import Connection, RemotingError, RequestHandler
from rocketq.remoting.connection import next_opaque

log = logging.getLogger(__name__)


class TransactionState(enum.Enum):
    """A local transaction's outcome (Java's LocalTransactionState); the value is END_TRANSACTION's
    ``commitOrRollback``."""

    COMMIT = SysFlag.TRANSACTION_COMMIT_TYPE
    ROLLBACK = SysFlag.TRANSACTION_ROLLBACK_TYPE
    UNKNOWN = SysFlag.TRANSACTION_NOT_TYPE


LocalTransaction = Callable[[Message, Any], "TransactionState | Awaitable[TransactionState]"]
"""``(message, arg) -> state``: runs the local transaction the message belongs with."""

TransactionCheck = Callable[[MessageExt], "TransactionState | Awaitable[TransactionState]"]
"""``(half message) -> state``: the broker asks how a transaction it holds a half message of ended."""


@dataclass(frozen=True, slots=True)
class TransactionSendResult:
    """What ``send_message_in_transaction`` did: the half message's send result and the local state."""

    send_result: SendResult
    local_state: TransactionState

    @property
    def status(self) -> SendStatus:
        return self.send_result.status

    @property
    def msg_id(self) -> str:
        """The message's unique id, also its transaction id."""
        return self.send_result.msg_id

    @property
    def transaction_id(self) -> str:
        return self.send_result.msg_id

    @property
    def offset_msg_id(self) -> str:
        """The half message's offset id."""
        return self.send_result.offset_msg_id

    @property
    def message_queue(self) -> MessageQueue:
        return self.send_result.message_queue

    @property
    def queue_offset(self) -> int:
        """The half message's offset in the broker's half queue."""
        return self.send_result.queue_offset


async def call_back(callback: Callable[..., Any], *args: Any, coroutine: bool | None = None) -> TransactionState:
    """Run a transaction callback (a coroutine function on the loop, a plain one in a thread; ``coroutine``
    says which when known); an exception, or an answer that is not a ``TransactionState``, counts as
    UNKNOWN."""
    try:
        if coroutine if coroutine is not None else inspect.iscoroutinefunction(callback):
            state = await callback(*args)
        else:
            state = await asyncio.to_thread(callback, *args)
            if inspect.isawaitable(state):
                state = await state
    except Exception:
        log.exception("transaction callback %s failed: the state is UNKNOWN", getattr(callback, "__name__", callback))
        return TransactionState.UNKNOWN
    if not isinstance(state, TransactionState):
        log.warning("transaction callback returned %r, not a TransactionState: the state is UNKNOWN", state)
        return TransactionState.UNKNOWN
    return state


def end_transaction_request(
    group: str,
    queue_offset: int,
    commit_log_offset: int,
    state: TransactionState,
    msg_id: str,
    transaction_id: str | None,
    *,
    from_check: bool = False,
) -> RemotingCommand:
    """END_TRANSACTION, oneway, for the half message at ``queue_offset``/``commit_log_offset``."""
    # EndTransactionRequestHeader's fields written out (tests/client/test_written_headers.py holds them equal)
    fields = {
        "producerGroup": group,
        "tranStateTableOffset": str(queue_offset),
        "commitLogOffset": str(commit_log_offset),
        "commitOrRollback": str(state.value),
        "fromTransactionCheck": "true" if from_check else "false",
        "msgId": msg_id,
    }
    if transaction_id is not None:
        fields["transactionId"] = transaction_id
    return make_request(RequestCode.END_TRANSACTION, opaque=next_opaque(), ext_fields=fields, oneway=True)


@mypyc_attr(allow_interpreted_subclasses=True)  # users may subclass it; see rocketq.native
class TransactionProducer(Producer):
    """A producer of transactional messages; every other send works as ``Producer``'s. Use from one
    event loop: ``async with TransactionProducer(local_transaction=..., check=..., group="g",
    namesrv_addr=...) as producer``."""

    def __init__(
        self,
        config: ProducerConfig | None = None,
        *,
        local_transaction: LocalTransaction,
        check: TransactionCheck,
        group: str | None = None,
        namesrv_addr: str | None = None,
    ) -> None:
        super().__init__(config, group=group, namesrv_addr=namesrv_addr)
        self.local_transaction = local_transaction
        self.check = check
        self._local_is_coroutine = inspect.iscoroutinefunction(local_transaction)
        self._checks: set[asyncio.Task[None]] = set()

    def _request_handlers(self) -> dict[int, RequestHandler]:
        return {RequestCode.CHECK_TRANSACTION_STATE: self._on_check}

    async def start(self) -> TransactionProducer:
        """Start as ``Producer.start`` does, ready to answer the brokers' transaction checks."""
        """Start, and introduce this producer to every broker at once (heartbeat), so that checks of
        its group's half messages can reach it before it sends anything."""
        await super().start()
        try:
            await self.instance.update_broker_addresses()
            await self.instance.heartbeat()
        except (MQClientError, RemotingError) as exc:  # the periodic heartbeat tries again
            log.warning("transaction producer %s could not reach the brokers yet: %s", self.config.group, exc)
        return self

    async def __aenter__(self) -> TransactionProducer:
        return await self.start()

    async def send_message_in_transaction(
        self, message: Message, arg: Any = None, *, timeout: float | None = None
    ) -> TransactionSendResult:
        """Send ``message`` as a half message, run the local transaction, end the transaction by its
        state (see the module docstring). A half message that was not stored (SEND_OK) is rolled back
        without running the local transaction.

        Raises:
            MQClientError: The message is delayed (a transactional message never is) or cannot be sent.
        """
        if message.delay_level > 0:
            raise ValidationError("a transactional message cannot be delayed")
        local_transaction = self.local_transaction
        half = {Property.TRANSACTION_PREPARED: "true", Property.PRODUCER_GROUP: self.config.group}
        result = await self._send_message(message, timeout, self.config.retry_times_when_send_failed, False, half)
        if result.status is SendStatus.SEND_OK:
            coroutine = self._local_is_coroutine if self.local_transaction is local_transaction else None
            state = await call_back(local_transaction, message, arg, coroutine=coroutine)
        else:
            state = TransactionState.ROLLBACK
        try:
            await self._end(result, state)
        except (RemotingError, MQClientError) as exc:  # the broker checks back later
            log.warning("END_TRANSACTION for %s failed: %s", result.msg_id, exc)
        return TransactionSendResult(result, state)

    async def _end(self, result: SendResult, state: TransactionState) -> None:
        offset_id = result.offset_msg_id  # an IPv4 id is host, port, then the offset in 16 hex digits
        commit_log_offset = int(offset_id[16:], 16) if len(offset_id) == 32 else parse_offset_message_id(offset_id)[2]
        request = end_transaction_request(
            self.config.group, result.queue_offset, commit_log_offset, state, result.msg_id, result.msg_id
        )
        await self.instance.remoting.oneway(await master_address(self.instance, result.message_queue), request)

    async def _on_check(self, request: RemotingCommand, connection: Connection) -> None:
        """CHECK_TRANSACTION_STATE from a broker: ask the check callback, answer with END_TRANSACTION."""
        try:
            header = CheckTransactionStateRequestHeader.from_ext_fields(request.ext_fields)
            messages = decode_messages(request.body)
        except (ProtocolError, ValueError) as exc:
            log.warning("malformed CHECK_TRANSACTION_STATE from %s: %s", connection.remote_address, exc)
            return None
        if not messages:
            return None
        message = messages[0]
        group = message.properties.get(Property.PRODUCER_GROUP)
        if group is not None and group != self.config.group:
            log.warning("CHECK_TRANSACTION_STATE for producer group %s reached group %s", group, self.config.group)
            return None
        task = asyncio.get_running_loop().create_task(self._answer_check(header, message, connection))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)
        return None

    async def _answer_check(
        self, header: CheckTransactionStateRequestHeader, message: MessageExt, connection: Connection
    ) -> None:
        state = await call_back(self.check, message)
        request = end_transaction_request(
            self.config.group,
            header.tran_state_table_offset,
            header.commit_log_offset,
            state,
            message.properties.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or message.offset_msg_id,
            header.transaction_id,
            from_check=True,
        )
        if connection.is_open:
            connection.oneway(request)

    async def aclose(self) -> None:
        """Finish the checks being answered, then close as ``Producer.aclose`` does."""
        for task in list(self._checks):
            task.cancel()
        await super().aclose()
