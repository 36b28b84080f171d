"""The check-back service (RocketMQ's TransactionalMessageCheckService): every
``transactionCheckInterval`` it asks a live producer of the group about each half message older than
``transactionTimeOut`` (or its ``CHECK_IMMUNITY_TIME_IN_SECONDS``) that is still pending, with
CHECK_TRANSACTION_STATE; the producer answers with END_TRANSACTION. After ``transactionCheckMax``
checks the half message is rolled back and a copy kept in ``TRANS_CHECK_MAX_TIME_TOPIC``. The half
messages of a transaction group are never checked: nobody ending the group before its immunity time
(or ``transactionGroupTimeout``) passed after its newest message rolls it back.

Time comes from the service's clock (``rocketq.remoting.clock``), so tests drive rounds with a fake one.
"""

from __future__ import annotations

import asyncio
import logging
import random

from rocketq.broker.context import BrokerContext
from rocketq.common.message import Property, find_property
from rocketq.common.message_id import offset_message_id
from rocketq.common.record import encode_record
from rocketq.protocol import RequestCode, make_request
from rocketq.protocol.headers import CheckTransactionStateRequestHeader
from rocketq.remoting import Connection
from rocketq.remoting.connection import next_opaque

from .half import check_max_copy, checked_record
from .ledger import HalfRun
from .service import TransactionError, TransactionService

log = logging.getLogger(__name__)

ROUND_STEP = 256  # checks sent between yields to the loop


class CheckService:
    def __init__(self, service: TransactionService, context: BrokerContext) -> None:
        self._service = service
        self._context = context
        self.rounds = 0  # check rounds completed
        self.checks_sent = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    async def run(self) -> None:
        interval_s = self._context.config.transaction_check_interval / 1000
        clock = self._service.clock
        while True:
            await clock.sleep(interval_s)
            try:
                await self.check_round()
            except Exception:
                log.exception("transaction check round failed; retrying next round")

    async def wait_rounds(self, count: int) -> None:
        """Return once ``count`` check rounds have completed since the broker started."""
        if self.rounds >= count:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((count, waiter))
        await waiter

    async def check_round(self) -> None:
        """One round: check, roll back what ran out of checks and the orphaned transaction groups, then
        persist the ledger."""
        service = self._service
        plan = service.ledger.check_plan(service.now_ms(), service.settings)
        for index, run in enumerate(plan.check):
            if not run.settling and run.first in service.ledger.runs:
                run.checks += 1
                self._check(run)
            if index % ROUND_STEP == ROUND_STEP - 1:
                await asyncio.sleep(0)
        for run in plan.discard:
            if run.settling or run.first not in service.ledger.runs:
                continue
            await self._discard(run)
        for key in plan.orphans:
            try:
                outcome = await service.end_group(key, None)
            except TransactionError:  # a request is ending it right now
                continue
            log.warning(
                "transactions: group %r of producer group %s was not ended in time: %d half messages rolled back",
                key[1],
                key[0],
                outcome.rolled_back,
            )
        await asyncio.to_thread(service.persist)
        self.rounds += 1
        still = []
        for count, waiter in self._waiters:
            if self.rounds >= count:
                if not waiter.done():
                    waiter.set_result(None)
            else:
                still.append((count, waiter))
        self._waiters = still

    def _check(self, run: HalfRun) -> None:
        context = self._context
        channels = [
            channel.channel
            for channel in context.clients.producers.get(run.info.producer_group, {}).values()
            if isinstance(channel.channel, Connection) and channel.channel.is_open
        ]
        if not channels:
            log.info(
                "transactions: no producer of group %s online to check half message %d (check %d)",
                run.info.producer_group,
                run.first,
                run.checks,
            )
            return
        half = context.store.lookup_message(run.commit_log_offset)
        if half is None:
            return
        unique_id = find_property(half.properties, Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        fields = CheckTransactionStateRequestHeader(
            tran_state_table_offset=run.first,
            commit_log_offset=run.commit_log_offset,
            msg_id=unique_id,
            transaction_id=unique_id,
            offset_msg_id=offset_message_id(context.store_host, run.commit_log_offset),
        ).to_ext_fields()
        body = encode_record(checked_record(half, run.checks))
        request = make_request(
            RequestCode.CHECK_TRANSACTION_STATE, opaque=next_opaque(), ext_fields=fields, body=body, oneway=True
        )
        connection = random.choice(channels)
        try:
            connection.send(request)
            self.checks_sent += 1
        except Exception as exc:
            log.info("transactions: cannot check half message %d with %s: %s", run.first, connection, exc)

    async def _discard(self, run: HalfRun) -> None:
        service = self._service
        half = self._context.store.lookup_message(run.commit_log_offset)
        extra = []
        if half is not None:
            service.check_max_topic()
            extra.append(check_max_copy(half))
        log.warning(
            "transactions: half message %d of producer group %s rolled back after %d unanswered checks",
            run.first,
            run.info.producer_group,
            run.checks,
        )
        result = service.rollback([run], extra)
        if result is not None:
            await service.flushed(result)
