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
from rocketq.broker.message_put import STORED, put_and_wait
from rocketq.common.message import CHECK_MAX_TOPIC, HALF_TOPIC, OP_TOPIC, find_property
from rocketq.common.record import StoredRecord, SysFlag
from rocketq.protocol import RemoteProtocolError, ResponseCode, decode_batch
from rocketq.remoting.clock import Clock
from rocketq.store import BatchToStore, MeasuredBatch, MessageToStore, PutMessageResult
from rocketq.store.config_file import read_json, write_json_atomically

from . import reading
from .batches import BATCH, batch_messages, batch_size, commit_suffix, committed_batch, half_batch_properties
from .committed import CommittedGroups, GroupKey
from .half import HALF_QUEUE_ID, committed_message, half_info, op_info, op_message
from .ledger import GroupPlan, HalfRun, Ledger, Settings, runs_as_ranges
from .ranges import Range, decode_op_body, in_order

log = logging.getLogger(__name__)

SCAN_STEP = 1024  # half or op messages read per step while loading, between yields to the loop


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
                        queue_offset, record.physical_offset, record.store_timestamp, record.properties
                    )
                    if run is not None and run.first == queue_offset:
                        run.checks = checks.get(queue_offset, 0)
            offset = end
            await asyncio.sleep(0)
        self.loaded = True
        pending = sum(run.messages for run in ledger.runs.values())
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
        """A crash in the middle of a commit's put leaves its op and a part of its messages: only the last
        put can have been cut short, so look after the last op."""
        if op_high > 0:
            last = next((record for _, record in reading.read_queue(self._store, OP_TOPIC, op_high - 1, op_high)), None)
            if last is not None:
                self._complete(last)

    def _complete(self, op: StoredRecord) -> None:
        """Store what a commit op's put did not: the messages after the ones found after it."""
        info = op_info(op.properties)
        if not info.commit or info.visible <= 0:
            return
        after = reading.records_after(self._store, op.physical_offset, info.visible)
        made = 0
        for record in after:
            if record.sys_flag & SysFlag.TRANSACTION_MASK != SysFlag.TRANSACTION_COMMIT_TYPE:
                break
            made += 1
        if made >= info.visible:
            return
        offsets = [offset for start, end in decode_op_body(op.body) for offset in range(start, end)]
        halves = [record for offset in offsets for record in reading.read_halves(self._store, offset, offset + 1)]
        log.warning(
            "transactions: the commit at %d made %d of its %d messages visible before the broker stopped; "
            "storing the others now",
            op.physical_offset,
            made,
            info.visible,
        )
        skip, seen = info.skip, 0
        for index, half in enumerate(halves):
            count = batch_size(half.properties) - skip
            if seen + count > made:  # this one is cut short, the ones after it missing
                done = max(0, made - seen)
                rest = halves[index + 1 :]
                if done:
                    self._commit_put([half], in_order([half.queue_offset]), [], [], info.group, skip=skip + done)
                    half_list = rest
                else:
                    half_list = [half, *rest]
                    if skip:  # the first one still skips what its first put made
                        self._commit_put([half], in_order([half.queue_offset]), [], [], info.group, skip=skip)
                        half_list = rest
                if half_list:
                    ranges = in_order(h.queue_offset for h in half_list)
                    self._commit_put(half_list, ranges, [], [], info.group)
                return
            seen += count
            skip = 0

    # -- half messages --------------------------------------------------------------------------------

    def half_stored(self, result: PutMessageResult, properties: str) -> None:
        """Register the half message a send stored (``properties``: its own)."""
        if result.status in STORED and result.queue_offsets:
            if not self._topics_made:
                self._make_topics(HALF_TOPIC, OP_TOPIC)
            self._register(result.queue_offsets[0], result.physical_offsets[0], result.store_timestamp, properties)

    def _register(self, first: int, commit_log_offset: int, store_timestamp: int, properties: str) -> HalfRun | None:
        messages = batch_size(properties)
        return self.ledger.add(HalfRun(first, 1, messages, commit_log_offset, store_timestamp, half_info(properties)))

    async def store_batch(
        self,
        topic: str,
        queue_id: int,
        items: bytes,
        transaction: dict[str, str],
        *,
        broker_suffix: str,
        sys_flag: int,
        born_timestamp: int,
        born_host: bytes,
        reconsume_times: int,
    ) -> PutMessageResult | tuple[int, str]:
        """Store a transactional batch as one half message (``rocketq.broker.transactions.batches``),
        once its items are known to be storable; (code, remark) when they are not."""
        context, config = self._context, self._context.config
        if len(items) > config.max_message_size:
            return ResponseCode.MESSAGE_ILLEGAL, f"the batch of {len(items)} bytes exceeds {config.max_message_size}"
        probe = BatchToStore(
            topic=topic, queue_id=queue_id, items=items, properties_suffix=commit_suffix(broker_suffix, transaction)
        )
        measured = self._store.measure_batch(probe, max_body_size=config.max_message_size)
        if measured is not None:
            count, wait = len(measured.sizes), measured.wait_for_flush
        else:  # items the compiled append leaves to the decoder (or no compiled append)
            try:
                decoded = decode_batch(items)
            except RemoteProtocolError as exc:
                return ResponseCode.MESSAGE_ILLEGAL, f"bad batch body: {exc}"
            if not decoded:
                return ResponseCode.MESSAGE_ILLEGAL, "empty batch"
            count, wait = len(decoded), True
        properties = half_batch_properties(broker_suffix, transaction, topic, queue_id, count)
        half = MessageToStore(
            topic=HALF_TOPIC, queue_id=HALF_QUEUE_ID, body=items, properties=properties,
            sys_flag=sys_flag & ~SysFlag.TRANSACTION_MASK, born_timestamp=born_timestamp, born_host=born_host,
            store_host=context.store_host, reconsume_times=reconsume_times,
        )  # fmt: skip
        result = await put_and_wait(context, [half], wait_for_flush=wait)
        self.half_stored(result, properties)
        return result

    # -- settlements ----------------------------------------------------------------------------------

    def _put(
        self,
        messages: list[MessageToStore],
        batches: list[MeasuredBatch],
        ranges: list[Range],
        runs: list[HalfRun],
        ops: int,
    ) -> PutMessageResult:
        """Store a settlement (``ops`` op messages first) and record it in the ledger, in this loop step."""
        context = self._context
        context.grouped_puts.put_pending()  # what the loop gathered goes first
        start = self._store.commit_log.max_offset
        try:
            result = self._store.put_together(messages, batches, dispatch=False)
        except Exception:  # a write failed: what part of the put did it store?
            for run in runs:
                run.settling = False
            self._after_failed_put(start, ops)
            raise
        context.dispatch.request(at_once=False)
        if result.status in STORED:
            self.ledger.settle(ranges, runs, result.queue_offsets[ops - 1] + 1)
        else:
            for run in runs:
                run.settling = False
            log.warning("transactions: settling %s refused: %s %s", ranges, result.status.value, result.remark)
        return result

    def _after_failed_put(self, start: int, ops: int) -> None:
        """A settlement's put failed half way (an I/O error, not a refusal): the ops it stored stand, as
        after a crash, and a commit op's missing messages are stored now."""
        first = self._store.lookup_message(start)
        if first is None or first.topic != OP_TOPIC:
            return  # nothing of it reached the CommitLog
        stored = [first, *reading.records_after(self._store, start, ops - 1)][:ops]
        log.error(
            "transactions: a settlement put failed after storing %d of its %d ops; completing it", len(stored), ops
        )
        for op in stored:
            if op.topic == OP_TOPIC:
                self.ledger.settle(decode_op_body(op.body), [])
                info = op_info(op.properties)
                if info.commit and info.group is not None:
                    self.ledger.committed.add(info.group, op.store_timestamp)
        for run in [r for r in self.ledger.runs.values() if all(map(self.ledger.is_settled, range(r.first, r.end)))]:
            self.ledger.settle([], [run])
        if stored[-1].topic == OP_TOPIC:
            self._complete(stored[-1])

    def _op(
        self, ranges: list[Range], *, commit: bool, visible: int = 0, skip: int = 0, group: GroupKey | None = None
    ) -> MessageToStore:
        return op_message(
            ranges, commit=commit, visible=visible, skip=skip, group=group, store_host=self._context.store_host,
            born_timestamp=self.now_ms(),
        )  # fmt: skip

    def _commit_put(
        self,
        halves: list[StoredRecord],
        commit_ranges: list[Range],
        rollback_ranges: list[Range],
        runs: list[HalfRun],
        group: GroupKey | None,
        *,
        skip: int = 0,
    ) -> PutMessageResult:
        """Commit ``halves`` (and roll back ``rollback_ranges``) in one put: the ops, then every committed
        message, in the order the commit op lists the half messages (``skip``, for a lone half message:
        how many of its messages are visible already)."""
        assert not skip or len(halves) == 1, "only a lone half message is committed in part"
        singles: list[MessageToStore] = []
        batches: list[MeasuredBatch] = []
        single_offsets: list[int] = []
        batch_offsets: list[int] = []
        for half in halves:
            if find_property(half.properties, BATCH) is not None:
                batch = committed_batch(half, skip)
                measured = self._store.measure_batch(batch) if batch is not None else None
                if measured is not None:
                    batches.append(measured)
                    batch_offsets.append(half.queue_offset)
                    continue
                expanded = batch_messages(batch) if batch is not None else []
            else:
                message = committed_message(half)
                expanded = [message] if message is not None else []
            if not expanded:
                log.warning("transactions: half message at %d names no real topic; dropped", half.physical_offset)
            singles.extend(expanded)
            single_offsets.append(half.queue_offset)
        visible = len(singles) + sum(len(measured.sizes) for measured in batches)
        listed = in_order([*single_offsets, *batch_offsets])
        ops = [self._op(rollback_ranges, commit=False)] if rollback_ranges else []
        ops.append(self._op(listed, commit=True, visible=visible, skip=skip, group=group))
        return self._put([*ops, *singles], batches, commit_ranges + rollback_ranges, runs, len(ops))

    def rollback(self, runs: list[HalfRun], extra: Sequence[MessageToStore] = ()) -> PutMessageResult | None:
        """Roll ``runs`` back (their op, then ``extra``); None when there is nothing to roll back."""
        if not runs:
            return None
        ranges = runs_as_ranges(runs)
        return self._put([self._op(ranges, commit=False), *extra], [], ranges, runs, 1)

    async def flushed(self, result: PutMessageResult) -> PutMessageResult:
        """Wait for the fsync of a settlement (SYNC_FLUSH) and its slave (SYNC_MASTER); at once otherwise."""
        if self._context.flush_waits.active:
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
            queue_offset, commit_log_offset, half.store_timestamp, half.properties
        )
        if run is None:
            return None
        if run.info.producer_group != producer_group:
            raise TransactionError(1, f"the half message belongs to producer group {run.info.producer_group!r}")
        if run.group_key is not None:
            raise TransactionError(
                1, f"the half message is part of transaction group {run.info.group_id!r}: end the group"
            )
        if run.settling or run.count != 1 or run.messages != 1:
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
            return GroupOutcome(0, sum(run.messages for run in plan.rollback), plan.already_committed, {}, result)
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
        committed = sum(run.messages for run in plan.commit)
        return GroupOutcome(committed, sum(run.messages for run in plan.rollback), False, {}, result)

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
