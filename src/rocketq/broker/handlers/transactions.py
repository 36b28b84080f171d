"""END_TRANSACTION (37), and the rocketq-only END_TRANSACTION_GROUP (9000) and GET_PENDING_TRANSACTIONS
(9001) (EndTransactionProcessor; the logic is in ``rocketq.broker.transactions``)."""

from __future__ import annotations

import logging

from rocketq.broker.context import BrokerContext, parsed, reply
from rocketq.broker.message_put import STORED, response_code
from rocketq.broker.transactions.service import TransactionError, TransactionService
from rocketq.common.record import SysFlag
from rocketq.protocol import ProtocolError, RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.headers import EndTransactionRequestHeader
from rocketq.protocol.transactions import (
    EndTransactionGroupRequestHeader,
    MissingPart,
    PendingGroup,
    PendingTransactions,
    TransactionGroupParts,
    TransactionGroupResult,
)
from rocketq.remoting import Connection, RequestHandler

log = logging.getLogger(__name__)


def handlers(context: BrokerContext) -> dict[int, RequestHandler]:
    def service() -> TransactionService:
        assert context.transactions is not None, "the broker starts its transaction service before serving"
        return context.transactions

    async def end_transaction(request: RemotingCommand, header: EndTransactionRequestHeader) -> RemotingCommand:
        if not context.is_master:
            return reply(request, ResponseCode.SLAVE_NOT_AVAILABLE, "a slave does not end transactions")
        if header.from_transaction_check:
            log.debug(
                "transactions: check answer %d for half message %d",
                header.commit_or_rollback,
                header.tran_state_table_offset,
            )
        transactions = service()
        try:
            result = transactions.end(
                header.producer_group,
                header.tran_state_table_offset,
                header.commit_log_offset,
                header.commit_or_rollback,
            )
        except TransactionError as exc:
            log.info("transactions: END_TRANSACTION refused: %s", exc)
            return reply(request, exc.code, str(exc))
        if result is None:
            return reply(request, ResponseCode.SUCCESS)
        if result.status not in STORED:
            return reply(request, response_code(result.status), result.remark or result.status.value)
        result = await transactions.flushed(result)
        return reply(request, response_code(result.status))

    async def end_group(request: RemotingCommand, header: EndTransactionGroupRequestHeader) -> RemotingCommand:
        if not context.is_master:
            return reply(request, ResponseCode.SLAVE_NOT_AVAILABLE, "a slave does not end transactions")
        state = header.commit_or_rollback & SysFlag.TRANSACTION_MASK
        if state not in (SysFlag.TRANSACTION_COMMIT_TYPE, SysFlag.TRANSACTION_ROLLBACK_TYPE):
            return reply(request, ResponseCode.SYSTEM_ERROR, "commitOrRollback must be 8 (commit) or 12 (rollback)")
        parts: dict[str, int] | None = None
        if state == SysFlag.TRANSACTION_COMMIT_TYPE:
            try:
                parts = TransactionGroupParts.decode(request.body).parts
            except ProtocolError as exc:
                return reply(request, ResponseCode.SYSTEM_ERROR, f"bad parts body: {exc}")
            if any(count < 0 for count in parts.values()):
                return reply(request, ResponseCode.SYSTEM_ERROR, "a part's message count is negative")
        key = (header.producer_group, header.transaction_group_id)
        try:
            outcome = await service().end_group(key, parts)
        except TransactionError as exc:
            return reply(request, exc.code, str(exc))
        if outcome.missing:
            missing = [MissingPart(part=p, expected=e, pending=f) for p, (e, f) in sorted(outcome.missing.items())]
            described = ", ".join(f"{m.part} holds {m.pending} of {m.expected}" for m in missing)
            body = TransactionGroupResult(missing=missing).encode()
            return reply(request, ResponseCode.TRANSACTION_FAILED, f"parts short of messages: {described}", body=body)
        if outcome.put is not None and outcome.put.status not in STORED:
            return reply(request, response_code(outcome.put.status), outcome.put.remark or outcome.put.status.value)
        body = TransactionGroupResult(
            committed=outcome.committed, rolled_back=outcome.rolled_back, already_committed=outcome.already_committed
        ).encode()
        code = ResponseCode.SUCCESS if outcome.put is None else response_code(outcome.put.status)
        return reply(request, code, "already committed" if outcome.already_committed else None, body=body)

    async def pending(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        transactions = service()
        rows = [
            PendingGroup(
                producer_group=group,
                half_messages=row["messages"],
                runs=row["runs"],
                transaction_groups=row["groups"],
                oldest_store_timestamp=row["oldest"],
            )
            for group, row in sorted(transactions.pending_summary().items())
        ]
        body = PendingTransactions(groups=rows, committed_groups=len(transactions.ledger.committed)).encode()
        return reply(request, ResponseCode.SUCCESS, body=body)

    return {
        RequestCode.END_TRANSACTION: parsed(EndTransactionRequestHeader, end_transaction),
        RequestCode.END_TRANSACTION_GROUP: parsed(EndTransactionGroupRequestHeader, end_group),
        RequestCode.GET_PENDING_TRANSACTIONS: pending,
    }
