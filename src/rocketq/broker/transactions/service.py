"""TransactionService: the broker's transactional messages (RocketMQ's TransactionalMessageService and
EndTransactionProcessor, plus rocketq's grouped transactions).

- A half message is stored by the send path (``half.make_half``) and registered here
  (``half_stored``).
- A settlement is one store put: op messages first (a rollback op, then a commit op), then the messages
  the commit makes visible. The op records the decision before anything becomes visible, and since a
  crash leaves a prefix of the CommitLog, only the last put can be cut short: after a restart, the
  messages missing after the last commit op are stored again (``load``).
- Every decision is taken and recorded in the ledger in the same loop step as its put, before any
  await, so a retried or concurrent END_TRANSACTION sees it and changes nothing.

State survives restarts through the ops in the CommitLog; ``config/transactions.json`` snapshots the
ledger so a restart reads only the ops after it and the half queue from the oldest pending message on,
in bounded steps.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rocketq.broker.context import BrokerContext
from rocketq.common.clock import Clock
from rocketq.common.message import CHECK_MAX_TOPIC, HALF_TOPIC, OP_TOPIC
from rocketq.common.record import StoredRecord, SysFlag
from rocketq.store import MessageToStore, PutMessageResult, PutStatus
from rocketq.store.config_file import read_json, write_json_atomically

from . import reading
from .committed import CommittedGroups, GroupKey
from .half import HALF_QUEUE_ID, committed_message, half_info, op_info, op_message
from .ledger import GroupPlan, HalfRun, Ledger, Settings, runs_as_ranges
from .ranges import Range, decode_op_body

log = logging.getLogger(__name__)

SCAN_STEP = 1024  # half or op messages read per step while loading, between yields to the loop
STORED = (PutStatus.PUT_OK, PutStatus.FLUSH_DISK_TIMEOUT)


class TransactionError(Exception):
    """A request the service refuses; ``code`` is the response code to answer with."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class GroupOutcome:
    """How a transaction group's end went on this broker."""

    committed: int  # messages made visible
    rolled_back: int
    already_committed: bool
    missing: dict[str, tuple[int, int]]  # part -> (expected, pending): refused, nothing changed
    put: PutMessageResult | None


class TransactionService:
    def __init__(self, context: BrokerContext, clock: Clock) -> None:
        self._context = context
        self._store = context.store
        self.clock = clock
        config = context.config
        self.settings = Settings(
            timeout_ms=config.transaction_time_out,
            check_max=config.transaction_check_max,
            group_timeout_ms=config.transaction_group_timeout,
        )
        retention_ms = int(config.transaction_group_committed_retention_hours * 3_600_000)
        self.ledger = Ledger(CommittedGroups(config.transaction_group_committed_max, retention_ms))
        self._path = config.store_path_root_dir / "config" / "transactions.json"
        self.loaded = False
        self._topics_made = False

    def now_ms(self) -> int:
        return int(self.clock.time() * 1000)

    # -- start-up -------------------------------------------------------------------------------------

    async def load(self) -> None:
        """Rebuild the ledger: the snapshot, the ops stored after it, the last commit's missing messages,
        then the pending half messages (from the oldest one not settled)."""
        store, ledger = self._store, self.ledger
        checks = ledger.restore(read_json(self._path) or {})
        op_low, op_high = reading.op_queue_bounds(store)
        ledger.op_offset = min(max(ledger.op_offset, op_low), op_high)
        for offset, record in reading.read_queue(store, OP_TOPIC, ledger.op_offset, op_high):
            self._learn_op(record, offset + 1)
            if offset % SCAN_STEP == 0:
                await asyncio.sleep(0)
        ledger.op_offset = op_high
        half_low, half_high = reading.half_queue_bounds(store)
        ledger.start_at(half_low)
        await self._complete_last_commit(op_high)
        offset = ledger.done_below
        while offset < half_high:
            offset = ledger.settled.end_of_range_at(offset)
            end = min(half_high, offset + SCAN_STEP)
            for queue_offset, record in reading.read_queue(store, HALF_TOPIC, offset, end):
                if not ledger.is_settled(queue_offset):
                    run = self._register(
                        queue_offset, 1, record.physical_offset, record.store_timestamp, record.properties
                    )
                    if run is not None and run.first == queue_offset:
                        run.checks = checks.get(queue_offset, 0)
            offset = end
            await asyncio.sleep(0)
        self.loaded = True
        pending = sum(run.count for run in ledger.runs.values())
        if pending or ledger.committed:
            log.info(
                "transactions: %d half messages pending, %d committed groups known", pending, len(ledger.committed)
            )

    def _learn_op(self, op: StoredRecord, op_end: int) -> None:
        info = op_info(op.properties)
        self.ledger.settle(decode_op_body(op.body), (), op_end)
        if info.commit and info.group is not None:
            self.ledger.committed.add(info.group, op.store_timestamp)

    async def _complete_last_commit(self, op_high: int) -> None:
        """A crash in the middle of a commit's put leaves its op and some of its messages: store the
        messages that did not make it (only the last put can have been cut short)."""
        if op_high <= 0:
            return
        last = next((record for _, record in reading.read_queue(self._store, OP_TOPIC, op_high - 1, op_high)), None)
        if last is None:
            return
        info = op_info(last.properties)
        if not info.commit or info.visible <= 0:
            return
        after = reading.records_after(self._store, last.physical_offset, info.visible)
        made = sum(
            1 for record in after if record.sys_flag & SysFlag.TRANSACTION_MASK == SysFlag.TRANSACTION_COMMIT_TYPE
        )
        if made >= info.visible:
            return
        offsets = [offset for start, end in decode_op_body(last.body) for offset in range(start, end)]
        missing = offsets[made:]
        halves = [record for offset in missing for record in reading.read_halves(self._store, offset, offset + 1)]
        log.warning(
            "transactions: the last commit (op at %d) stored %d of its %d messages before the broker stopped; "
            "storing the other %d now",
            last.physical_offset,
            made,
            info.visible,
            len(halves),
        )
        ranges = [(offset, offset + 1) for offset in missing]
        self._commit_put(halves, ranges, [], [], info.group)

    # -- half messages --------------------------------------------------------------------------------

    def half_stored(self, result: PutMessageResult, properties: str) -> None:
        """Register the half messages a send stored (``properties``: theirs, or the suffix of a batch)."""
        if result.status in STORED and result.queue_offsets:
            if not self._topics_made:
                self._make_topics(HALF_TOPIC, OP_TOPIC)
            self._register(
                result.queue_offsets[0], len(result.queue_offsets), result.physical_offsets[0], result.store_timestamp,
                properties,
            )  # fmt: skip

    def _register(
        self, first: int, count: int, commit_log_offset: int, store_timestamp: int, properties: str
    ) -> HalfRun | None:
        return self.ledger.add(HalfRun(first, count, commit_log_offset, store_timestamp, half_info(properties)))

    # -- settlements ----------------------------------------------------------------------------------

    def _put(
        self, messages: Sequence[MessageToStore], ranges: list[Range], runs: list[HalfRun], ops: int
    ) -> PutMessageResult:
        """Store a settlement (``ops`` op messages first) and record it in the ledger, in this loop step."""
        context = self._context
        context.grouped_puts.put_pending()  # what the loop gathered goes first
        result = self._store.put_messages(messages, dispatch=False)
        context.dispatch.request(at_once=True)
        if result.status in STORED:
            self.ledger.settle(ranges, runs, result.queue_offsets[ops - 1] + 1)
        else:
            for run in runs:
                run.settling = False
            log.warning("transactions: settling %s refused: %s %s", ranges, result.status.value, result.remark)
        return result

    def _op(
        self, ranges: list[Range], *, commit: bool, visible: int = 0, group: GroupKey | None = None
    ) -> MessageToStore:
        return op_message(
            ranges, commit=commit, visible=visible, group=group, store_host=self._context.store_host,
            born_timestamp=self.now_ms(),
        )  # fmt: skip

    def _commit_put(
        self,
        halves: list[StoredRecord],
        commit_ranges: list[Range],
        rollback_ranges: list[Range],
        runs: list[HalfRun],
        group: GroupKey | None,
    ) -> PutMessageResult:
        visible: list[MessageToStore] = []
        for half in halves:
            message = committed_message(half)
            if message is None:
                log.warning("transactions: half message at %d names no real topic; dropped", half.physical_offset)
                continue
            visible.append(message)
        ops = [self._op(rollback_ranges, commit=False)] if rollback_ranges else []
        ops.append(self._op(commit_ranges, commit=True, visible=len(visible), group=group))
        return self._put([*ops, *visible], commit_ranges + rollback_ranges, runs, len(ops))

    def rollback(self, runs: list[HalfRun], extra: Sequence[MessageToStore] = ()) -> PutMessageResult | None:
        """Roll ``runs`` back (their op, then ``extra``); None when there is nothing to roll back."""
        if not runs:
            return None
        ranges = runs_as_ranges(runs)
        return self._put([self._op(ranges, commit=False), *extra], ranges, runs, 1)

    async def flushed(self, result: PutMessageResult) -> PutMessageResult:
        """Wait for the fsync of a settlement (SYNC_FLUSH); at once otherwise."""
        if self._store.config.sync_flush:
            return await self._context.flush_waits.wait(result)
        return result

    # -- END_TRANSACTION ------------------------------------------------------------------------------

    def end(
        self, producer_group: str, queue_offset: int, commit_log_offset: int, state: int
    ) -> PutMessageResult | None:
        """Commit or roll back one half message (END_TRANSACTION). None when there is nothing to do: an
        unknown state, or a half message already settled (a retried end, a late check answer).

        Raises:
            TransactionError: The half message is not where the request says, or belongs to another
                producer group or to a transaction group.
        """
        transaction = state & SysFlag.TRANSACTION_MASK
        if transaction == SysFlag.TRANSACTION_NOT_TYPE:
            return None
        if transaction not in (SysFlag.TRANSACTION_COMMIT_TYPE, SysFlag.TRANSACTION_ROLLBACK_TYPE):
            raise TransactionError(1, f"commitOrRollback {state} is neither 8 (commit) nor 12 (rollback)")
        ledger = self.ledger
        if ledger.is_settled(queue_offset):
            log.debug("transactions: half message %d already settled; end ignored", queue_offset)
            return None
        half = self._store.lookup_message(commit_log_offset)
        if half is None or half.topic != HALF_TOPIC or half.queue_offset != queue_offset:
            raise TransactionError(
                1, f"no half message at commitLogOffset {commit_log_offset} with offset {queue_offset}"
            )
        run = ledger.run_of(queue_offset) or self._register(
            queue_offset, 1, commit_log_offset, half.store_timestamp, half.properties
        )
        if run is None:
            return None
        if run.info.producer_group != producer_group:
            raise TransactionError(1, f"the half message belongs to producer group {run.info.producer_group!r}")
        if run.group_key is not None:
            raise TransactionError(
                1, f"the half message is part of transaction group {run.info.group_id!r}: end the group"
            )
        if run.settling or run.count != 1:
            return None
        ranges = [(queue_offset, queue_offset + 1)]
        if transaction == SysFlag.TRANSACTION_COMMIT_TYPE:
            return self._commit_put([half], ranges, [], [run], None)
        return self.rollback([run])

    # -- grouped transactions -------------------------------------------------------------------------

    async def end_group(self, key: GroupKey, parts: Mapping[str, int] | None) -> GroupOutcome:
        """Commit (``parts``: part -> expected pending messages) or roll back (None) transaction group
        ``key`` on this broker, as ``Ledger.group_plan`` decides; waits for the put's fsync.

        Raises:
            TransactionError: The group is being ended by another request.
        """
        plan = self.ledger.group_plan(key, parts)
        if any(run.settling for run in plan.commit + plan.rollback):
            raise TransactionError(2, f"transaction group {key[1]!r} is being ended by another request")
        if plan.missing:
            return GroupOutcome(0, 0, False, plan.missing, None)
        if parts is None or plan.already_committed:
            result = self.rollback(plan.rollback)
            if result is not None:
                await self.flushed(result)
            return GroupOutcome(0, sum(run.count for run in plan.rollback), plan.already_committed, {}, result)
        return await self._commit_group(key, plan)

    async def _commit_group(self, key: GroupKey, plan: GroupPlan) -> GroupOutcome:
        runs = plan.commit + plan.rollback
        for run in runs:
            run.settling = True
        try:
            halves = await self._read_runs(plan.commit)
        except BaseException:
            for run in runs:
                run.settling = False
            raise
        commit_ranges, rollback_ranges = runs_as_ranges(plan.commit), runs_as_ranges(plan.rollback)
        result = self._commit_put(halves, commit_ranges, rollback_ranges, runs, key)
        if result.status in STORED:
            self.ledger.committed.add(key, self.now_ms())
            await self.flushed(result)
        committed = sum(run.count for run in plan.commit)
        return GroupOutcome(committed, sum(run.count for run in plan.rollback), False, {}, result)

    async def _read_runs(self, runs: list[HalfRun]) -> list[StoredRecord]:
        """The half messages of ``runs``, in offset order (waiting for the dispatcher to index them)."""
        if not runs:
            return []
        store = self._store
        needed = max(run.end for run in runs)
        if reading.half_queue_bounds(store)[1] < needed:
            await asyncio.to_thread(store.dispatch_now)
        halves: list[StoredRecord] = []
        for run in sorted(runs, key=lambda r: r.first):
            if run.count > reading.READ_CHUNK:
                halves.extend(await asyncio.to_thread(reading.read_halves, store, run.first, run.end))
            else:
                halves.extend(reading.read_halves(store, run.first, run.end))
        expected = sum(run.count for run in runs)
        if len(halves) != expected:
            raise TransactionError(1, f"{expected - len(halves)} half messages are gone from the store")
        return halves

    # -- persistence ----------------------------------------------------------------------------------

    def persist(self) -> None:
        self.ledger.committed.expire(self.now_ms())
        write_json_atomically(self._path, self.ledger.snapshot())

    def _make_topics(self, *topics: str) -> None:
        """Create the broker's transaction topics (one queue each) on first use, as RocketMQ does."""
        created = [self._context.topics.create_system_topic(topic, 1)[1] for topic in topics]
        self._topics_made = True
        if any(created):
            self._context.request_registration()

    def check_max_topic(self) -> None:
        """Create ``TRANS_CHECK_MAX_TIME_TOPIC`` on first use."""
        self._make_topics(HALF_TOPIC, OP_TOPIC, CHECK_MAX_TOPIC)

    def pending_summary(self) -> dict[str, dict[str, int]]:
        return self.ledger.pending_by_producer_group()


__all__ = ["HALF_QUEUE_ID", "GroupOutcome", "TransactionError", "TransactionService"]
