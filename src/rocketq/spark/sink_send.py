"""What the ``rocketmq`` sink does on the brokers: a task's sends (at least once, or as the half messages of
an exactly-once transaction) and the driver's commit or rollback of such a transaction. No Spark here:
the writers (``sink``) call these with what ``TaskContext`` told them, so the functions run the same
under a test that calls them directly.

Each Python worker process keeps one started producer per sink configuration (``shared_sender``), on a
loop thread of its own, for every task and commit it runs.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import secrets
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Final, TypeVar

import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage

from rocketq.client.config import ClientConfig, ProducerConfig
from rocketq.client.errors import BrokerResponseError, MQClientError
from rocketq.client.message import Message, MessageQueue
from rocketq.client.producer import Producer
from rocketq.client.sync import LoopThread
from rocketq.client.transaction_group import TransactionGroup, TransactionGroupError, TransactionGroupResult
from rocketq.common.errors import RocketqError
from rocketq.remoting.errors import RemotingError
from rocketq.spark.options import SinkOptions
from rocketq.spark.sink_commit import CommitPlan, Prepared, QueueChooser, chunk_key, commit_plan, part_id
from rocketq.spark.sink_rows import SinkSchemaError, Target, row_messages

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_IN_FLIGHT: Final = 4
"""Arrow batches of one task being sent at once (each as several send requests)."""
SEND_BATCH_BYTES: Final = 1024 * 1024
"""A send request carries at most this many body bytes (and ``sendBatchSize`` messages)."""
END_ATTEMPTS: Final = 3
"""Tries of a commit or rollback on one broker that cannot be reached or is busy ending the group."""
END_RETRY_PAUSE_S: Final = 0.25


class SinkCommitError(MQClientError):
    """The commit of a transaction failed on some brokers (``failed``: broker -> error) after it
    succeeded on others (``committed``), which keep it."""

    def __init__(self, transaction: str, committed: list[str], failed: dict[str, BaseException]) -> None:
        problems = "; ".join(f"{broker}: {error}" for broker, error in sorted(failed.items()))
        kept = f"committed on {', '.join(committed)}, which keep it" if committed else "committed on no broker"
        super().__init__(
            f"the rocketmq sink could not commit {transaction!r} on {', '.join(sorted(failed))} ({problems});"
            f" {kept}. Running the batch again commits it on the others and is dropped by those that have it"
        )
        self.transaction = transaction
        self.committed = committed
        self.failed = failed


@dataclass(slots=True)
class Attempt:
    """One task attempt's exactly-once write: its transaction group and part, and the queues of the
    topics it writes, asked of the name servers once per attempt."""

    group: TransactionGroup
    part: str
    partition: int
    queues: dict[str, list[MessageQueue]] = field(default_factory=dict)
    choosers: dict[str, QueueChooser] = field(default_factory=dict)


class Sender:
    """A started producer on a loop thread of its own, shared by the tasks of a Python worker."""

    def __init__(self, options: SinkOptions) -> None:
        config = ProducerConfig(
            group=options.producer_group,
            client=ClientConfig(namesrv_addr=options.name_server, instance_name=f"spark-{uuid.uuid4().hex[:8]}"),
            send_msg_timeout_s=options.request_timeout_s,
        )
        self.options = options
        self._loop = LoopThread(name="rocketq-spark-sink")
        try:
            self.producer = self._loop.call(_started(config))
        except BaseException:
            self._loop.stop()
            raise
        self._queues: dict[str, list[MessageQueue]] = {}

    def call(self, coroutine: Awaitable[T]) -> T:
        return self._loop.call(_awaited(coroutine))

    def close(self) -> None:
        self._loop.close_with(self.producer.aclose())

    # -- at least once --------------------------------------------------------------------------------

    def submit(self, groups: Sequence[tuple[Target, list[Message]]]) -> Future[int]:
        """Start sending; the future holds how many messages the brokers acknowledged."""
        return self._loop.submit(self._send(groups))

    async def _send(self, groups: Sequence[tuple[Target, list[Message]]]) -> int:
        sends = []
        timeout = self.options.request_timeout_s
        for target, messages in groups:
            queue = None
            if target.queue_id is not None:
                queues = self._queues.get(target.topic)
                if queues is None:
                    queues = self._queues[target.topic] = await self.producer.fetch_publish_queues(target.topic)
                queue = named_queue(target, queues)
            for chunk in _chunks(messages, self.options.send_batch_size):
                sends.append(self.producer.send_batch(chunk, queue=queue, timeout=timeout))
        await asyncio.gather(*sends)
        return sum(len(messages) for _, messages in groups)

    # -- exactly once ---------------------------------------------------------------------------------

    def attempt(self, transaction: str, partition: int, attempt_number: int) -> Attempt:
        group = self.producer.transaction_group(transaction, immunity_s=self.options.transaction_timeout_s)
        return Attempt(group, part_id(partition, attempt_number, secrets.token_hex(4)), partition)

    def submit_prepared(
        self, groups: Sequence[tuple[Target, list[Message]]], attempt: Attempt, first_seq: int
    ) -> Future[collections.Counter[str]]:
        """Start sending as half messages of ``attempt``'s part; the future holds how many went to each
        broker. A send is never retried: a failure fails the task, whose next attempt is another part."""
        return self._loop.submit(self._send_prepared(groups, attempt, first_seq))

    async def _send_prepared(
        self, groups: Sequence[tuple[Target, list[Message]]], attempt: Attempt, first_seq: int
    ) -> collections.Counter[str]:
        sends = []
        held: collections.Counter[str] = collections.Counter()
        timeout = self.options.request_timeout_s
        for target, messages in groups:
            queues = await self._fresh_queues(attempt, target.topic)
            named = named_queue(target, queues) if target.queue_id is not None else None
            chooser = attempt.choosers.get(target.topic)
            if chooser is None:
                chooser = attempt.choosers[target.topic] = QueueChooser(queues)
            for index, chunk in enumerate(_chunks(messages, self.options.send_batch_size)):
                where = named or chooser.choose(chunk_key(attempt.partition, first_seq, index))
                held[where.broker_name] += len(chunk)
                sends.append(attempt.group.send_batch(chunk, where, attempt.part, timeout=timeout))
        await asyncio.gather(*sends)
        return held

    async def _fresh_queues(self, attempt: Attempt, topic: str) -> list[MessageQueue]:
        """The topic's queues as the name servers give them when the attempt first needs them (not as
        cached by a worker that ran earlier tasks: which brokers a chunk goes to must follow the route)."""
        queues = attempt.queues.get(topic)
        if queues is None:
            await self.producer.instance.update_route(topic)
            fetched = await self.producer.fetch_publish_queues(topic)
            queues = attempt.queues.setdefault(topic, fetched)  # another send of the attempt may have been first
        return queues


async def _started(config: ProducerConfig) -> Producer:
    return await Producer(config).start()


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


def named_queue(target: Target, queues: list[MessageQueue]) -> MessageQueue:
    """The queue a row named (queueId, and brokerName when the topic is on several brokers)."""
    assert target.queue_id is not None
    brokers = sorted({q.broker_name for q in queues})
    broker = target.broker
    if broker is None:
        if len(brokers) != 1:
            raise SinkSchemaError(
                f"queueId {target.queue_id} is ambiguous: topic {target.topic!r} has queues on {brokers};"
                " add a brokerName column"
            )
        broker = brokers[0]
    queue = MessageQueue(target.topic, broker, target.queue_id)
    if queue not in queues:
        raise SinkSchemaError(
            f"{queue} is not a writable queue of {target.topic!r} (those are {[str(q) for q in queues]})"
        )
    return queue


def _chunks(messages: list[Message], count: int) -> Iterator[list[Message]]:
    chunk: list[Message] = []
    size = 0
    for message in messages:
        if chunk and (len(chunk) >= count or size + len(message.body) > SEND_BATCH_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(message)
        size += len(message.body)
    if chunk:
        yield chunk


_lock = threading.Lock()
_senders: dict[SinkOptions, Sender] = {}


def shared_sender(options: SinkOptions) -> Sender:
    """This worker process's sender for these options, made on first use."""
    with _lock:
        sender = _senders.get(options)
        if sender is None:
            sender = _senders[options] = Sender(options)
        return sender


def close_senders() -> None:
    """Close this process's senders (Spark's workers never do: they end with their process)."""
    with _lock:
        senders = list(_senders.values())
        _senders.clear()
    for sender in senders:
        sender.close()


def _sent(
    batches: Iterable[pa.RecordBatch], submit: Callable[[pa.RecordBatch, int], Future[T]], done: Callable[[T], None]
) -> int:
    """Submit each batch's sends with at most ``MAX_IN_FLIGHT`` batches in flight, hand each result to
    ``done``; returns the rows once every send is acknowledged."""
    pending: collections.deque[Future[T]] = collections.deque()
    rows = 0
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            pending.append(submit(batch, rows))
            rows += batch.num_rows
            while len(pending) > MAX_IN_FLIGHT:
                done(pending.popleft().result())
        while pending:
            done(pending.popleft().result())
    except (MQClientError, RemotingError) as exc:
        raise MQClientError(f"the rocketmq sink could not send: {exc}") from exc
    return rows


def send_partition(
    options: SinkOptions, columns: dict[str, str], batches: Iterable[pa.RecordBatch], key_prefix: str
) -> int:
    """Send every row of ``batches`` (at least once); returns once all are acknowledged (the rows' count)."""
    sender = shared_sender(options)

    def submit(batch: pa.RecordBatch, first_seq: int) -> Future[int]:
        return sender.submit(list(row_messages(batch, columns, options.topic, key_prefix, first_seq).items()))

    return _sent(batches, submit, lambda _: None)


def prepare_partition(
    options: SinkOptions,
    columns: dict[str, str],
    batches: Iterable[pa.RecordBatch],
    *,
    transaction: str,
    partition: int,
    attempt: int,
    key_prefix: str,
) -> Prepared:
    """Send every row of ``batches`` as a half message of a new part of ``transaction``; returns the
    task's report for the driver once all are acknowledged."""
    sender = shared_sender(options)
    state = sender.attempt(transaction, partition, attempt)
    held: collections.Counter[str] = collections.Counter()

    def submit(batch: pa.RecordBatch, first_seq: int) -> Future[collections.Counter[str]]:
        groups = row_messages(batch, columns, options.topic, key_prefix, first_seq)
        return sender.submit_prepared(list(groups.items()), state, first_seq)

    rows = _sent(batches, submit, held.update)
    return Prepared(transaction, partition, attempt, state.part, rows, dict(held))


def commit_prepared(
    options: SinkOptions, messages: Sequence[WriterCommitMessage | None], transaction: str | None = None
) -> dict[str, TransactionGroupResult]:
    """Commit the transaction the task reports ``messages`` name, on every broker that holds parts of
    it, all brokers at once; answers per broker (``already_committed`` on a broker that had committed it:
    the replay's half messages were rolled back there).

    Raises:
        SinkCommitError: Some brokers did not commit (its cause: the first error, e.g. a
            ``TransactionGroupError`` when a part does not hold its messages on a broker, which then
            changed nothing); those that did keep it.
    """
    plan = commit_plan(messages, transaction)
    if plan.transaction is None or not plan.parts:
        return {}
    sender = shared_sender(options)
    results = sender.call(_on_brokers(sender.producer, plan.transaction, plan.brokers, plan, options))
    failed = {broker: result for broker, result in results.items() if isinstance(result, BaseException)}
    committed = {broker: r for broker, r in results.items() if isinstance(r, TransactionGroupResult)}
    replayed = sorted(broker for broker, answer in committed.items() if answer.already_committed)
    fresh = sorted(broker for broker, answer in committed.items() if not answer.already_committed)
    if failed:
        error = SinkCommitError(plan.transaction, sorted(committed), failed)
        raise error from next(iter(failed.values()))
    if replayed and fresh:  # a commit cut short before (a broker away): completed now
        log.warning(
            "rocketmq sink: %r was committed before on %s; committed now on %s", plan.transaction, replayed, fresh
        )
    elif replayed:
        log.info("rocketmq sink: %r was committed before; this run of it is dropped", plan.transaction)
    log.info("rocketmq sink: %r: %d rows committed on %s", plan.transaction, plan.rows, fresh)
    return committed


def abort_prepared(
    options: SinkOptions, messages: Sequence[WriterCommitMessage | None], transaction: str | None = None
) -> int:
    """Roll back the transaction everywhere: on the brokers the reports name and on every other broker
    the name servers know (a failed attempt may have left half messages anywhere). Brokers that cannot be
    reached are logged; they roll back by themselves after ``transactionTimeoutMs``. Returns the half
    messages rolled back."""
    plan = commit_plan(messages, transaction)
    if plan.transaction is None:
        log.warning(
            "rocketmq sink: no task of the failed write reported its transaction; the brokers roll back its half"
            " messages after transactionTimeoutMs (%d s)",
            options.transaction_timeout_s,
        )
        return 0
    sender = shared_sender(options)
    brokers = sender.call(_every_master(sender.producer, plan.brokers))
    results = sender.call(_on_brokers(sender.producer, plan.transaction, brokers, None, options))
    rolled_back = 0
    for broker, result in sorted(results.items()):
        if isinstance(result, TransactionGroupResult):
            rolled_back += result.rolled_back
        else:
            level = logging.WARNING if broker in plan.parts else logging.INFO
            log.log(level, "rocketmq sink: could not roll back %r on %s: %s", plan.transaction, broker, result)
    return rolled_back


async def _every_master(producer: Producer, named: list[str]) -> list[str]:
    try:
        await producer.instance.update_broker_addresses()
    except (MQClientError, RemotingError) as exc:
        log.info("rocketmq sink: the name servers' broker list is not available: %s", exc)
    return sorted(set(named) | set(producer.instance.broker_addrs))


async def _on_brokers(
    producer: Producer, transaction: str, brokers: list[str], plan: CommitPlan | None, options: SinkOptions
) -> dict[str, TransactionGroupResult | BaseException]:
    """Commit (``plan``) or roll back (None) ``transaction`` on each of ``brokers``, all at once."""
    group = producer.transaction_group(transaction, immunity_s=options.transaction_timeout_s)
    timeout = options.request_timeout_s

    async def end(broker: str) -> TransactionGroupResult:
        if plan is None:
            return await _retried(producer, lambda: group.rollback(broker, timeout=timeout))
        return await _retried(producer, lambda: group.commit(broker, plan.parts[broker], timeout=timeout))

    results = await asyncio.gather(*(end(broker) for broker in brokers), return_exceptions=True)
    answers: dict[str, TransactionGroupResult | BaseException] = {}
    for broker, result in zip(brokers, results, strict=True):
        if isinstance(result, BaseException) and not isinstance(result, Exception):
            raise result
        answers[broker] = result
    return answers


async def _retried(
    producer: Producer, action: Callable[[], Awaitable[TransactionGroupResult]]
) -> TransactionGroupResult:
    """``action`` (ending the group on one broker), tried again when the broker could not be reached (its
    address learnt anew: a restarted broker may listen elsewhere) or was busy ending the group."""
    attempt = 1
    while True:
        try:
            return await action()
        except TransactionGroupError:
            raise
        except (MQClientError, RemotingError) as exc:
            if attempt >= END_ATTEMPTS or (isinstance(exc, BrokerResponseError) and not exc.retriable):
                raise
            log.info("rocketmq sink: ending a transaction failed (%s); trying again", exc)
        await asyncio.sleep(END_RETRY_PAUSE_S * attempt)
        attempt += 1
        try:
            await producer.instance.update_broker_addresses()
        except RocketqError as exc:
            log.info("rocketmq sink: the name servers' broker list is not available: %s", exc)
