"""PushConsumer: a pull loop per assigned queue (long polling) feeding a listener.

Concurrent mode hands batches to the listener from many workers and commits, per queue, the
smallest offset not yet consumed. A batch the listener fails (returns RECONSUME_LATER or False,
or raises) goes back to the broker, which redelivers it through ``%RETRY%<group>`` with a growing
delay, and to ``%DLQ%<group>`` after ``max_reconsume_times``. Orderly mode locks its queues on the
broker and consumes one message at a time per queue, in order; a failing message pauses its queue
and is retried locally, so the order is never broken.

This module holds the consumer's life, its queues and their pull loops, and orderly consuming; how
concurrent mode runs the listener and settles batches is ``rocketq.client.consume_service``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from typing import Final

from mypy_extensions import mypyc_attr

from rocketq.client.config import ConsumerConfig
from rocketq.client.consume_service import ConsumeService
from rocketq.client.consumer_core import ConsumerCore
from rocketq.client.errors import MQClientError
from rocketq.client.listener import Listener
from rocketq.client.message import MessageExt, MessageQueue
from rocketq.client.process_queue import ProcessQueue
from rocketq.client.pull import PullResult, PullStatus
from rocketq.client.queue_locks import QueueLocks
from rocketq.client.running_info import directly_result, process_queue_info
from rocketq.client.selector import MessageSelector
from rocketq.protocol.running_info import ConsumeMessageDirectlyResult, QueueInfo
from rocketq.remoting.tasks import cancel_and_wait

log = logging.getLogger(__name__)

_wall_clock: Final = time.time  # (bound once: compiled code reads a Final name as a C static)

FLOW_CONTROL_DELAY_S = 0.05


@mypyc_attr(allow_interpreted_subclasses=True)  # users may subclass it; see rocketq.native
class PushConsumer:
    """Consumes the subscribed topics by handing what it pulls to a listener (RocketMQ's
    DefaultMQPushConsumer). Use from one event loop.

    ``PushConsumer(ConsumerConfig(group="g", client=ClientConfig(namesrv_addr=...)), listener)``, then
    ``subscribe(topic, selector)`` and ``await start()`` (or ``async with``). ``orderly=True`` consumes
    each queue in order, one message at a time, holding the queue's lock on its broker.

    The listener (a function, run on the consume threads, or a coroutine function) gets a list of
    ``MessageExt`` and answers: ``ConsumeStatus.CONSUME_SUCCESS`` or True acknowledge;
    ``RECONSUME_LATER``, False, ``Reconsume(delay_level)`` or an exception ask for redelivery; None
    (no ``return``) acknowledges too, with a WARNING the first time (unlike Java, which redelivers on a
    null status). See ``rocketq.client.listener.Listener``.
    """

    def __init__(self, config: ConsumerConfig, listener: Listener | None = None, *, orderly: bool = False) -> None:
        self.config = config
        self.orderly = orderly
        # settings every pull reads, read once (the config is immutable)
        self._max_span = config.consume_concurrently_max_span
        self._pull_interval_s = config.pull_interval_s
        self._core = ConsumerCore(
            config, consume_type="CONSUME_PASSIVELY", on_assigned=self._assigned, on_revoked=self._revoked
        )
        self._core.on_reset = self._reset
        self._core.orderly = orderly
        self._core.queue_infos = self._queue_infos
        self._core.consume_directly = self._consume_directly
        self._service = ConsumeService(config, self._core, listener)  # runs the listener
        self._queues: dict[MessageQueue, ProcessQueue] = {}
        self._queue_limits: dict[str, tuple[int, int]] = {}  # topic: messages, bytes a queue may cache
        self._pull_tasks: dict[MessageQueue, asyncio.Task[None]] = {}
        self._orderly_tasks: dict[MessageQueue, asyncio.Task[None]] = {}
        self._orderly_wake: dict[MessageQueue, asyncio.Event] = {}
        self._orderly_in_hand: dict[MessageQueue, asyncio.Task[None]] = {}  # the message being consumed
        self._lock_task: asyncio.Task[None] | None = None
        self._timeout_task: asyncio.Task[None] | None = None
        self._locks = QueueLocks(self._core)  # orderly clustering: this client's queue locks on the brokers
        self._awaiting_lock: set[MessageQueue] = set()  # orderly: assigned, taken once their lock is held
        self._started = False
        self._closed = False  # after aclose(): a closed consumer does not start again
        self.suspended = False  # suspend(): no pulls until resume()

    # -- setup ----------------------------------------------------------------------------------------

    def subscribe(self, topic: str, selector: MessageSelector | str = "*") -> None:
        """Consume ``topic``'s messages that ``selector`` picks: a ``MessageSelector`` (by tag or by a
        SQL92 expression, see docs/filters.md) or a tag expression such as ``"TagA || TagB"``."""
        self._core.subscribe(topic, selector)

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic`` (its queues are committed and dropped at the next rebalance, at once
        when started)."""
        self._core.unsubscribe(topic)

    def suspend(self) -> None:
        """Stop pulling (RocketMQ's ``suspend``): what is already cached is still consumed."""
        self.suspended = True

    def resume(self) -> None:
        """Pull again after ``suspend()``."""
        self.suspended = False

    def register_listener(self, listener: Listener) -> None:
        """Consume with ``listener`` (before ``start()``; one given to the constructor is replaced). See
        ``rocketq.client.listener.Listener`` for what it gets and may answer."""
        self._service.set_listener(listener)

    @property
    def client_id(self) -> str:
        return self._core.instance.client_id

    @property
    def assigned_queues(self) -> set[MessageQueue]:
        return set(self._core.assigned)

    @property
    def consumed(self) -> int:
        """How many messages this consumer has consumed (acknowledged, or sent back for a retry)."""
        return self._service.consumed

    def consume_offset(self, queue: MessageQueue) -> int | None:
        """The offset this member has consumed ``queue`` up to, the one it commits next (None when it has
        none for the queue)."""
        offset = self._core.offsets.table.get(queue)
        return None if offset is None else int(offset)

    async def start(self) -> PushConsumer:
        """Join the group and start consuming. When no NameServer answers yet, it starts anyway and keeps
        asking (a WARNING says so), as RocketMQ's Java consumer does."""
        if self._started or self._closed:
            raise MQClientError("the consumer is already started" if self._started else "the consumer is closed")
        if self._service.listener is None:
            raise MQClientError("register a listener before start()")
        if not self._core.subscriptions:
            raise MQClientError("subscribe to a topic before start()")
        self._started = True
        try:
            await self._core.start()
        except BaseException:
            self._started = False  # (a broker refused a SQL92 subscription, or no route could be had)
            raise
        if self._locking:
            self._lock_task = asyncio.create_task(self._renew_locks())
        if not self.orderly:
            self._timeout_task = asyncio.create_task(self._service.give_up_overdue_calls())
        return self

    async def aclose(self) -> None:
        """Stop pulling, let listener calls in progress finish, commit offsets and leave the group."""
        if not self._started:
            return
        self._started = False
        self._closed = True
        await self._core.stop_background()
        await cancel_and_wait([self._lock_task, self._timeout_task])
        await self._revoked(sorted(self._queues))
        await self._service.wait_for_running(10)
        await self._core.aclose()
        self._service.close()

    async def __aenter__(self) -> PushConsumer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- assignment -----------------------------------------------------------------------------------

    @property
    def _locking(self) -> bool:
        """Orderly clustering consumers lock their queues on the broker; broadcasting members do not
        (every member consumes every queue)."""
        return self.orderly and self._core.clustering

    async def _assigned(self, queues: list[MessageQueue]) -> None:
        """Newly assigned queues (rebalance lock held). An orderly consumer takes a queue only once it
        holds its broker lock, and only then reads where to start: the previous owner has committed by
        the time it unlocks, so nothing it consumed is consumed again."""
        if self._locking:
            held = await self._lock(queues)
            self._awaiting_lock.update(queue for queue in queues if queue not in held)
            queues = [queue for queue in queues if queue in held]
        for queue in queues:
            await self._take_from_start(queue)

    async def _take_from_start(self, queue: MessageQueue) -> None:
        """Take ``queue`` from its committed offset (or per consume_from_where); when the broker cannot
        say where that is, leave it for the next rebalance (and let go of its lock)."""
        offset = await self._core.start_offset_or_skip(queue)
        if offset is not None:
            await self._take(queue, offset)
        elif self._locking:
            await self._locks.unlock([queue])

    async def _take(self, queue: MessageQueue, offset: int) -> None:
        """Start pulling (and, orderly, consuming) ``queue`` from ``offset``."""
        process = self._queues[queue] = ProcessQueue(
            queue, offset, locked=not self._locking or queue in self._locks.held
        )
        self._share_limits(queue.topic)
        if self.orderly:
            self._orderly_wake[queue] = asyncio.Event()
            self._orderly_tasks[queue] = asyncio.create_task(self._consume_orderly(process))
        self._pull_tasks[queue] = asyncio.create_task(self._pull_loop(process))

    def _share_limits(self, topic: str) -> None:
        """What each of the queues of ``topic`` assigned to this member may cache
        (``ConsumerConfig.queue_limits``), again whenever one is taken or let go. Counted over the
        assignment, which the rebalance sets before it takes the first queue: a queue pulling while
        the others are still being taken is already held to its share."""
        assigned = sum(1 for queue in self._core.assigned if queue.topic == topic)
        self._queue_limits[topic] = self.config.queue_limits(assigned)

    async def _stop(self, queue: MessageQueue) -> None:
        """Stop pulling and consuming ``queue``; an orderly message in hand is finished first."""
        self._awaiting_lock.discard(queue)
        process = self._queues.pop(queue, None)
        if process is not None:
            process.dropped = True
            self._share_limits(queue.topic)
        self._orderly_wake.pop(queue, None)
        await cancel_and_wait([self._pull_tasks.pop(queue, None), self._orderly_tasks.pop(queue, None)])
        in_hand = self._orderly_in_hand.pop(queue, None)
        if in_hand is not None:  # finish the message in hand before its offset is committed and unlocked
            await in_hand

    async def _revoked(self, queues: list[MessageQueue]) -> None:
        for queue in queues:
            await self._stop(queue)
        if self._locking and queues:
            for queue in queues:
                await self._core.offsets.persist(queue)
            await self._locks.unlock(queues)

    async def _reset(self, offsets: dict[MessageQueue, int]) -> None:
        """Restart each queue this member consumes at its new offset (what was cached from before is
        dropped; an orderly queue keeps its lock). Rebalance lock held."""
        for queue, offset in offsets.items():
            if queue not in self._queues:
                continue  # awaiting its lock: it starts from the broker's (reset) offset when taken
            await self._stop(queue)
            self._core.offsets.update(queue, offset, increase_only=False)
            await self._take(queue, offset)

    # -- pulling --------------------------------------------------------------------------------------

    async def _pull_loop(self, process: ProcessQueue) -> None:
        """Pull ``process``'s queue while it is this member's. Each answer's messages are cached and
        handed to the listener in the read that brought them (``took``, via ``pull_once``'s
        ``on_result``); the loop then moves the queue's pull offset and sends the next pull."""
        core, queue = self._core, process.queue
        selector, tags = None, frozenset[str]()

        def took(result: PullResult) -> None:
            self._take_pulled(process, result)

        while not process.dropped:
            limit_count, limit_bytes = self._queue_limits[queue.topic]
            if (
                self.suspended
                or process.count >= limit_count
                or process.cached_bytes >= limit_bytes
                or (not self.orderly and process.max_span > self._max_span)
            ):
                await asyncio.sleep(FLOW_CONTROL_DELAY_S)
                continue
            if not process.locked:  # orderly: the lock was lost (not renewed in time)
                await asyncio.sleep(0.5)
                continue
            subscribed = core.selector(queue.topic)
            # subscribe() again changes it at once (the same object, nearly always: no __eq__ call)
            if subscribed is not selector and subscribed != selector:
                selector, tags = subscribed, subscribed.tags()
            commit = core.offsets.table.get(queue, 0) if core.clustering else 0
            result = await core.pull_once(
                queue, process.next_pull_offset, subscribed, tags, commit_offset=commit, on_result=took
            )
            if result is None:
                continue
            if process.is_dropped():
                return
            if result.status is PullStatus.OFFSET_ILLEGAL:
                log.warning(
                    "offset %d of %s is illegal; moving to %d",
                    process.next_pull_offset,
                    queue,
                    result.next_begin_offset,
                )
                core.offsets.update(queue, result.next_begin_offset, increase_only=False)
                await core.offsets.persist(queue)
            process.next_pull_offset = result.next_begin_offset
            if result.messages:  # (taken by ``took`` already: a coroutine listener has started on them)
                if self._pull_interval_s > 0:
                    await asyncio.sleep(self._pull_interval_s)
            elif result.status is PullStatus.FOUND and process.count == 0:
                # everything pulled was filtered out client-side: nothing pending, commit past it
                core.offsets.update(queue, result.next_begin_offset)

    def _take_pulled(self, process: ProcessQueue, result: PullResult) -> None:
        """A pull answer of ``process``'s queue, in the read that brought it: cache its messages and
        hand them to the listener (nothing for a queue revoked while its pull was out)."""
        if process.is_dropped():
            return
        if result.messages:
            process.add(result.messages)
            self._dispatch(process, result.messages)
        process.last_pull_ms = int(_wall_clock() * 1000)  # (after the hand-over: the listener goes first)

    # -- consuming (concurrently in rocketq.client.consume_service, orderly here) ---------------------

    def _dispatch(self, process: ProcessQueue, messages: list[MessageExt]) -> None:
        """Consume a pulled batch: orderly, wake the queue's consuming task; else hand it to the service."""
        if self.orderly:
            self._orderly_wake[process.queue].set()
        else:
            self._service.dispatch(process, messages)

    async def _consume_orderly(self, process: ProcessQueue) -> None:
        wake = self._orderly_wake[process.queue]
        while not process.dropped:
            message = process.first_pending() if process.locked else None
            if message is None:
                wake.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(1.0):
                        await wake.wait()
                continue
            # shielded: cancelling this worker does not abandon the message midway; a revocation
            # waits for it (``_orderly_in_hand``) before committing the queue's offset and unlocking
            in_hand = asyncio.ensure_future(self._consume_one_in_order(process, message))
            self._orderly_in_hand[process.queue] = in_hand
            await asyncio.shield(in_hand)

    async def _consume_one_in_order(self, process: ProcessQueue, message: MessageExt) -> None:
        failed = await self._service.call_in_slot([message])
        if failed:
            if message.reconsume_times < self.config.reconsume_limit(orderly=True):
                message.reconsume_times += 1  # what the listener sees next time, as in RocketMQ
                await asyncio.sleep(self.config.suspend_current_queue_time_ms / 1000)
                return  # the same message again, nothing after it overtakes it
            if not await self._core.send_back(message, delay_level=-1):  # exhausted: to the DLQ
                await asyncio.sleep(self.config.suspend_current_queue_time_ms / 1000)
                return
        self._service.consumed += 1
        offset = process.finish([message])
        if offset >= 0:
            self._core.offsets.update(process.queue, offset)

    # -- running info (consumerStatus, consumeMessage) ------------------------------------------------

    def _queue_infos(self) -> list[QueueInfo]:
        table = self._core.offsets.table
        return [
            QueueInfo(queue.topic, queue.broker_name, queue.queue_id, process_queue_info(process, table.get(queue, 0)))
            for queue, process in sorted(self._queues.items())
        ]

    async def _consume_directly(self, message: MessageExt) -> ConsumeMessageDirectlyResult:
        """The listener on one message an operator chose; nothing is committed or sent back."""
        began = time.monotonic()
        failed = await self._service.call_listener([message])
        return directly_result(bool(failed), self.orderly, time.monotonic() - began)

    # -- broker locks (orderly) -----------------------------------------------------------------------

    async def _lock(self, queues: Sequence[MessageQueue]) -> set[MessageQueue]:
        """Lock or renew ``queues`` on their brokers; returns those held, and marks their process queues."""
        held = await self._locks.lock(queues)
        for queue in queues:
            process = self._queues.get(queue)
            if process is not None:
                process.locked = queue in held
                if process.locked:
                    wake = self._orderly_wake.get(queue)
                    if wake is not None:
                        wake.set()
        return held

    async def _renew_locks(self) -> None:
        """Re-lock every assigned queue (renews held locks, retries ones another member still holds)."""
        while True:
            await self.config.client.clock.sleep(
                min(self.config.lock_renew_interval_s, 1.0) if self._unlocked() else self.config.lock_renew_interval_s
            )
            try:
                async with self._core.rebalance_lock:
                    await self._lock(sorted(self._queues.keys() | self._awaiting_lock))
                    for queue in sorted(self._awaiting_lock & self._locks.held):  # their previous owner let go
                        self._awaiting_lock.discard(queue)
                        await self._take_from_start(queue)
            except Exception as exc:
                log.warning("lock renewal failed: %s", exc)

    def _unlocked(self) -> bool:
        return bool(self._awaiting_lock) or any(not process.locked for process in self._queues.values())
