"""PullConsumer in the style of RocketMQ's lite pull consumer: you call ``poll()`` for batches.

Queues come from ``subscribe()`` (assigned by rebalancing, like a push consumer's) or ``assign()``
(chosen by you). Background prefetchers long-poll each queue into a bounded buffer. With
``auto_commit`` the offsets of what ``poll()`` returned are committed every few seconds; otherwise
call ``commit()``. ``seek()`` moves a queue's position. Also an async iterator of messages.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from mypy_extensions import mypyc_attr

from rocketq.client.config import ConsumerConfig
from rocketq.client.consumer_core import ConsumerCore
from rocketq.client.errors import MQClientError, RouteNotFoundError
from rocketq.client.listener import user_views
from rocketq.client.message import MessageExt, MessageQueue
from rocketq.client.pull import PullStatus
from rocketq.client.route import subscribe_queues
from rocketq.client.selector import MessageSelector
from rocketq.protocol import RequestCode
from rocketq.protocol.headers import GetMaxOffsetRequestHeader, GetMinOffsetRequestHeader, SearchOffsetRequestHeader
from rocketq.protocol.running_info import ProcessQueueInfo, QueueInfo
from rocketq.remoting.tasks import cancel_and_wait

log = logging.getLogger(__name__)

PULL_THRESHOLD_FOR_ALL = 10_000  # buffered messages across queues before prefetching pauses
FLOW_CONTROL_DELAY_S = 0.02  # a paused prefetcher looks again after this
_OFFSET_ILLEGAL: Final = PullStatus.OFFSET_ILLEGAL  # (bound once: see rocketq.native on enum members)
_NO_NEW_MSG: Final = PullStatus.NO_NEW_MSG
HANDOVER_PULLS = 32
"""While pulls come back full (a backlog), a thread waiting in ``wait_buffered`` is woken once this many
pull batches' worth of messages is buffered, not after each loop turn: every wake of that thread costs
both threads a few context switches around the GIL (the waker holds it while it wakes), more than the
thread's own work on a batch. A pull that comes back short (the queue is caught up) wakes it at once."""
HANDOVER_WAIT_S = 0.002
"""The longest a waiting thread is left waiting for a hand-over's worth of full pulls (the next pull may
fail, or its queue pause)."""


@dataclass(slots=True)
class _QueueState:
    queue: MessageQueue
    next_offset: int
    selector: MessageSelector
    task: asyncio.Task[None] | None = None
    generation: int = 0  # bumped by seek(): batches pulled before it are discarded
    consumed_offset: int = -1  # offset after the last message poll() returned
    # pulled batches: the offset after each, its messages and their bodies' bytes
    buffered: collections.deque[tuple[int, list[MessageExt], int]] = field(default_factory=collections.deque)
    buffered_count: int = 0  # messages in ``buffered``
    buffered_bytes: int = 0  # their bodies' bytes

    def buffer(self, next_offset: int, batch: list[MessageExt]) -> None:
        nbytes = sum([len(message.body) for message in batch])
        self.buffered.append((next_offset, batch, nbytes))
        self.buffered_count += len(batch)
        self.buffered_bytes += nbytes

    def take(self) -> tuple[int, list[MessageExt]]:
        next_offset, batch, nbytes = self.buffered.popleft()
        self.buffered_count -= len(batch)
        self.buffered_bytes -= nbytes
        return next_offset, batch

    def drop_buffered(self) -> int:
        """Forget what was prefetched; returns how many messages that was."""
        dropped = self.buffered_count
        self.buffered.clear()
        self.buffered_count = self.buffered_bytes = 0
        return dropped


def _by_queue(state: _QueueState) -> MessageQueue:
    return state.queue


class _Messages:
    """``async for`` over a ``PullConsumer``: its polled batches one message at a time, until it is
    closed (a class, not an async generator, so that the module compiles with mypyc)."""

    def __init__(self, consumer: PullConsumer) -> None:
        self._consumer = consumer
        self._batch: collections.deque[MessageExt] = collections.deque()

    def __aiter__(self) -> _Messages:
        return self

    async def __anext__(self) -> MessageExt:
        while not self._batch:
            if not self._consumer.running:
                raise StopAsyncIteration
            self._batch.extend(await self._consumer.poll(1.0))
        return self._batch.popleft()


@mypyc_attr(allow_interpreted_subclasses=True)  # users may subclass it; see rocketq.native
class PullConsumer:
    """Fetches in the background and hands messages over when asked (RocketMQ's lite pull consumer,
    Kafka's consumer): ``await poll(timeout)`` for a batch, or ``async for message in consumer``. Use from
    one event loop.

    Either ``subscribe()`` topics (the group's rebalancing assigns queues) or ``assign()`` queues, then
    ``await start()``. With ``auto_commit`` the position after what ``poll()`` returned is committed
    periodically; else call ``commit()``. ``seek()`` and its kin move a queue's position.
    """

    def __init__(self, config: ConsumerConfig, *, auto_commit: bool = True) -> None:
        self.config = config
        self.auto_commit = auto_commit
        self._core = ConsumerCore(
            config, consume_type="CONSUME_ACTIVELY", on_assigned=self._assigned, on_revoked=self._revoked
        )
        self._core.on_reset = self._reset
        self._core.queue_infos = self._queue_infos
        self._core.store_positions = self._store_positions
        self._states: dict[MessageQueue, _QueueState] = {}
        self._poll_order: list[_QueueState] = []  # ``_states`` by queue: the order poll() looks in
        self._manual: bool | None = None  # True after assign(), False after subscribe()
        self._arrived = asyncio.Event()
        self._buffered = 0
        # what the prefetchers buffered, taken by poll() on the loop or by poll_nowait() on another
        # thread: the buffers, their counts and the queues' consumed offsets change under this lock
        self._buffer_lock = threading.Lock()
        # one held lock per thread blocked in wait_buffered(): released (under the buffer lock, by the
        # loop) to wake that thread when batches were buffered
        self._bells: list[threading.Lock] = []
        self._wake_due = False  # a _wake_threads call is on the loop's ready queue
        self._wake_timer: asyncio.TimerHandle | None = None  # a later one, while full pulls come back
        self._loop_thread = 0
        self._started = False
        self._closed = False
        self._commit_task: asyncio.Task[None] | None = None
        self._paused: set[MessageQueue] = set()

    def _queue_infos(self) -> list[QueueInfo]:
        """The assigned queues as GET_CONSUMER_RUNNING_INFO shows them: the position, what is prefetched."""
        infos = []
        for queue, state in sorted(self._states.items()):
            with self._buffer_lock:
                cached = [message.queue_offset for _, batch, _ in state.buffered for message in batch]
            info = ProcessQueueInfo(
                commit_offset=max(state.consumed_offset, 0),
                cached_msg_min_offset=min(cached, default=0),
                cached_msg_max_offset=max(cached, default=0),
                cached_msg_count=state.buffered_count,
                cached_msg_size_in_mi_b=state.buffered_bytes // (1024 * 1024),
                droped=False,
            )
            infos.append(QueueInfo(queue.topic, queue.broker_name, queue.queue_id, info))
        return infos

    # -- assignment -----------------------------------------------------------------------------------

    def subscribe(self, topic: str, selector: MessageSelector | str = "*") -> None:
        """Consume ``topic``'s messages that ``selector`` picks: a ``MessageSelector`` (by tag or by a
        SQL92 expression, see docs/filters.md) or a tag expression such as ``"TagA || TagB"``."""
        if self._manual:
            raise MQClientError(
                "this consumer uses assign() (or was started before any subscribe());"
                " subscribe() and assign() do not mix"
            )
        self._manual = False
        self._core.subscribe(topic, selector)

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic`` (subscribe() mode): its queues are committed and dropped at the next
        rebalance, at once when started."""
        if self._manual:
            raise MQClientError("this consumer uses assign(); assign the queues it should keep instead")
        self._core.unsubscribe(topic)

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Stop fetching ``queues`` and keep poll() from returning their messages until ``resume``."""
        self._paused.update(queues)

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        """Return ``queues``' messages from ``poll()`` again."""
        self._paused.difference_update(queues)
        self._arrived.set()  # a poll waiting now may have buffered messages of these to return
        self._wake_threads()

    @property
    def paused(self) -> set[MessageQueue]:
        return set(self._paused)

    async def assign(self, queues: Sequence[MessageQueue], selector: MessageSelector | str = "*") -> None:
        """Consume exactly these queues (no group rebalancing), the messages ``selector`` picks."""
        if self._manual is False:
            raise MQClientError("this consumer uses subscribe(); subscribe() and assign() do not mix")
        self._manual = True
        for queue in queues:
            self._core.subscriptions.setdefault(queue.topic, MessageSelector.of(selector))
        gone = [q for q in self._states if q not in set(queues)]
        await self._revoked(gone)
        self._core.assigned = set(queues)
        if self._started:
            await self._assigned([q for q in queues if q not in self._states])

    async def fetch_queues(self, topic: str) -> list[MessageQueue]:
        """All readable queues of a topic (to choose from for ``assign``)."""
        route = await self._core.instance.update_route(topic)
        if route is None:
            raise RouteNotFoundError(f"topic {topic!r} does not exist")
        return subscribe_queues(topic, route)

    @property
    def assignment(self) -> set[MessageQueue]:
        return set(self._states)

    @property
    def client_id(self) -> str:
        """This member's id, as the brokers list it (``rocketq admin consumerConnection``)."""
        return self._core.instance.client_id

    @property
    def running(self) -> bool:
        """Started and not closed yet: what iterating over the consumer waits on."""
        return self._started

    async def _assigned(self, queues: list[MessageQueue]) -> None:
        # the queues' start offsets are asked for at once (one round trip to wait for, not one per
        # queue); assigned by hand, an unknown start offset is the caller's error; by the group, a
        # later rebalance tries the queue again
        core = self._core
        start_offset = core.start_offset if self._manual else core.start_offset_or_skip
        offsets = await asyncio.gather(*(start_offset(queue) for queue in queues))
        for queue, offset in zip(queues, offsets, strict=True):
            if offset is None:
                continue
            state = _QueueState(queue, offset, self._core.selector(queue.topic), consumed_offset=offset)
            self._states[queue] = state
            self._poll_order = sorted(self._states.values(), key=_by_queue)
            state.task = asyncio.create_task(self._prefetch(state))

    async def _revoked(self, queues: list[MessageQueue]) -> None:
        for queue in queues:
            state = self._states.pop(queue, None)
            if state is None:
                continue
            self._poll_order = sorted(self._states.values(), key=_by_queue)
            await cancel_and_wait([state.task])
            with self._buffer_lock:
                self._buffered -= state.drop_buffered()
            if self.auto_commit and state.consumed_offset >= 0:
                self._core.offsets.update(queue, state.consumed_offset)
                await self._core.offsets.persist(queue)

    # -- lifecycle ------------------------------------------------------------------------------------

    async def start(self) -> PullConsumer:
        """Start fetching. Subscribed, when no NameServer answers yet, it starts anyway and keeps asking."""
        if self._started or self._closed:
            raise MQClientError("the consumer is already started" if self._started else "the consumer is closed")
        if self._manual is None:  # neither subscribe() nor assign() yet: assign() follows, as in Java's
            self._manual = True  # lite pull consumer (start, fetch_queues, assign)
        self._started = True
        self._loop_thread = threading.get_ident()
        if self._manual:
            self._core.offsets.open()
            await self._core.instance.start()
            for topic in self._core.subscriptions:
                await self._core.instance.update_route(topic)
            await self._assigned(sorted(self._core.assigned))
        else:
            try:
                await self._core.start()
            except BaseException:
                self._started = False  # (a broker refused a SQL92 subscription, or no route could be had)
                raise
        if self.auto_commit and self._manual:  # subscribe() mode: the core commits on the same period
            self._commit_task = asyncio.create_task(self._auto_commit())
        return self

    async def aclose(self) -> None:
        """Commit (with ``auto_commit``), leave the group and disconnect."""
        if not self._started:
            return
        self._started = False
        self._closed = True
        self._wake_threads()  # a thread in wait_buffered() returns, and its poll_nowait() says closed
        await self._core.stop_background()
        await cancel_and_wait([self._commit_task])
        await self._revoked(sorted(self._states))
        if self._manual:
            await self._core.offsets.persist_all()
            self._core.offsets.close()
            await self._core.instance.aclose()
        else:
            await self._core.aclose()

    async def __aenter__(self) -> PullConsumer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- prefetching ----------------------------------------------------------------------------------

    async def _prefetch(self, state: _QueueState) -> None:
        """Long-poll ``state``'s queue into its buffer. Like Java's lite pull consumer, a queue pauses
        while its buffer holds ``pull_threshold_for_queue`` messages or ``pull_threshold_size_for_queue_mib``
        of bodies, and every queue while the consumer holds PULL_THRESHOLD_FOR_ALL messages: at most one
        pull batch more than a threshold is ever buffered."""
        core, config, queue = self._core, self.config, state.queue
        loop = asyncio.get_running_loop()
        tags = state.selector.tags()
        full, handover = config.pull_batch_size, config.pull_batch_size * HANDOVER_PULLS
        limit_bytes = config.pull_threshold_size_for_queue_mib * 1024 * 1024
        while True:
            if (
                queue in self._paused
                or self._buffered >= PULL_THRESHOLD_FOR_ALL
                or state.buffered_count >= config.pull_threshold_for_queue
                or state.buffered_bytes >= limit_bytes
            ):
                await asyncio.sleep(FLOW_CONTROL_DELAY_S)
                continue
            subscribed = state.selector if self._manual else core.selector(queue.topic)
            if subscribed != state.selector:  # subscribed again with another selector
                state.selector, tags = subscribed, subscribed.tags()
            generation, offset = state.generation, state.next_offset
            result = await core.pull_once(queue, offset, state.selector, tags)
            if result is None:
                continue
            if generation != state.generation:
                continue  # a seek happened while this pull was in flight
            if result.status is _OFFSET_ILLEGAL:
                log.warning("offset %d of %s is illegal; moving to %d", offset, queue, result.next_begin_offset)
            state.next_offset = result.next_begin_offset
            messages = result.messages
            if messages:
                with self._buffer_lock:
                    state.buffer(result.next_begin_offset, messages)
                    self._buffered += len(messages)
                    if self._bells and not self._wake_due:
                        if len(messages) < full or self._buffered >= handover:
                            # once per loop turn, after the batches its reads brought are buffered
                            self._wake_due = True
                            loop.call_soon(self._wake_threads)
                        elif self._wake_timer is None:
                            self._wake_timer = loop.call_later(HANDOVER_WAIT_S, self._wake_threads)
                self._arrived.set()
            elif result.status is not _NO_NEW_MSG:
                with self._buffer_lock:
                    if not state.buffered:  # filtered out: nothing to hand over
                        state.consumed_offset = result.next_begin_offset

    # -- polling --------------------------------------------------------------------------------------

    async def poll(self, timeout: float = 5.0) -> list[MessageExt]:
        """The next batch of messages (one queue's pull: the first queue in queue order with one
        buffered), or [] when none came within ``timeout``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            batch = self.poll_nowait()
            if batch:
                return batch
            remaining = deadline - loop.time()
            if remaining <= 0:
                return []
            self._arrived.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await self._arrived.wait()

    def poll_nowait(self) -> list[MessageExt]:
        """The next buffered batch, as ``poll()`` returns it, or [] when none is buffered now. Unlike the
        rest of the consumer it may be called from any thread: the blocking ``SyncPullConsumer.poll``
        takes a batch with it on the caller's thread, without a hand-over to the loop. It moves the
        queue's consumed position (under the buffer lock) and nothing else: the loop copies the
        positions into the offset store before it persists them (``_store_positions``), so a take
        never has to wake the loop."""
        if not self._started:
            raise MQClientError("the consumer is closed" if self._closed else "the consumer is not started")
        paused = self._paused
        with self._buffer_lock:
            for state in self._poll_order:
                if state.buffered and state.queue not in paused:
                    next_offset, batch = state.take()
                    self._buffered -= len(batch)
                    state.consumed_offset = next_offset
                    break
            else:
                return []
        return user_views(batch)

    def wait_buffered(self, timeout: float) -> None:
        """Block this thread until ``poll_nowait()`` may have a batch to take: one is buffered (or a
        paused queue with one is resumed), the consumer is closed, or ``timeout`` seconds have passed.
        For threads other than the consumer's loop (the blocking ``SyncPullConsumer.poll`` waits here
        between two ``poll_nowait()`` calls): nothing hops into the loop and back to wait. The thread
        waits on a lock of its own (its "bell"), which the loop releases once per turn in which its
        prefetchers buffered batches, after they have (one wake for all the answers a read brought);
        the check and the bell's registration are under the buffer lock, so no wake is lost."""
        if threading.get_ident() == self._loop_thread:
            raise RuntimeError("wait_buffered() on the consumer's own loop would block it; await poll()")
        bell = threading.Lock()
        bell.acquire()
        with self._buffer_lock:
            if not self._started or self._takeable():
                return
            self._bells.append(bell)
        if not bell.acquire(timeout=timeout):
            with self._buffer_lock:
                if bell in self._bells:  # (else the loop released it just after the timeout)
                    self._bells.remove(bell)

    def _takeable(self) -> bool:
        """Whether a batch ``poll_nowait()`` would take is buffered (call under the buffer lock)."""
        paused = self._paused
        return any(state.buffered and state.queue not in paused for state in self._poll_order)

    def _wake_threads(self) -> None:
        """Wake the threads in ``wait_buffered()`` to look again."""
        with self._buffer_lock:
            self._wake_due = False
            if self._wake_timer is not None:
                self._wake_timer.cancel()  # (a no-op when it is the timer calling)
                self._wake_timer = None
            bells, self._bells = self._bells, []
        for bell in bells:
            bell.release()

    def _store_positions(self) -> None:
        """On the loop, with ``auto_commit``: each queue's consumed position (what ``poll`` returned,
        on whichever thread) into the offset store, before the store persists them."""
        if self.auto_commit:
            update = self._core.offsets.update
            for queue, state in self._states.items():
                if state.consumed_offset >= 0:
                    update(queue, state.consumed_offset)

    def __aiter__(self) -> AsyncIterator[MessageExt]:
        """Every message, one at a time (polled in batches); the loop ends once the consumer is closed."""
        return _Messages(self)

    # -- positions and commits ------------------------------------------------------------------------

    def _state(self, queue: MessageQueue) -> _QueueState:
        state = self._states.get(queue)
        if state is None:
            raise MQClientError(f"{queue} is not assigned to this consumer")
        return state

    def seek(self, queue: MessageQueue, offset: int) -> None:
        """Continue ``queue`` from ``offset``; what was prefetched from before is dropped.
        Call it on the consumer's event loop."""
        state = self._state(queue)
        state.generation += 1
        with self._buffer_lock:
            self._buffered -= state.drop_buffered()
            state.next_offset = offset
            state.consumed_offset = offset
        if state.task is not None:  # a long poll in flight would hold the old position for seconds
            state.task.cancel()
            state.task = asyncio.get_running_loop().create_task(self._prefetch(state))
        if self.auto_commit:
            self._core.offsets.update(queue, offset, increase_only=False)

    async def _reset(self, offsets: dict[MessageQueue, int]) -> None:
        for queue, offset in offsets.items():
            if queue in self._states:
                self.seek(queue, offset)

    async def seek_to_begin(self, queue: MessageQueue) -> None:
        """Continue ``queue`` from its first offset still stored."""
        fields = GetMinOffsetRequestHeader(topic=queue.topic, queue_id=queue.queue_id).to_ext_fields()
        self.seek(queue, await self._core.queue_offset(RequestCode.GET_MIN_OFFSET, queue, fields))

    async def seek_to_end(self, queue: MessageQueue) -> None:
        """Continue ``queue`` after its last message (only what arrives from now on)."""
        fields = GetMaxOffsetRequestHeader(topic=queue.topic, queue_id=queue.queue_id).to_ext_fields()
        self.seek(queue, await self._core.queue_offset(RequestCode.GET_MAX_OFFSET, queue, fields))

    async def offset_for_timestamp(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """The first offset of ``queue`` stored at or after ``timestamp_ms`` (milliseconds since the epoch)."""
        fields = SearchOffsetRequestHeader(
            topic=queue.topic, queue_id=queue.queue_id, timestamp=timestamp_ms
        ).to_ext_fields()
        return await self._core.queue_offset(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, queue, fields)

    async def commit(self) -> None:
        """Commit, for every assigned queue, the position after what poll() returned."""
        for queue, state in self._states.items():
            if state.consumed_offset >= 0:
                self._core.offsets.update(queue, state.consumed_offset, increase_only=False)
        await self._core.offsets.persist_all()

    async def committed(self, queue: MessageQueue) -> int:
        """The offset stored for ``queue`` (on the broker, or locally when broadcasting); -1 if none."""
        return await self._core.offsets.read(queue)

    async def _auto_commit(self) -> None:
        while True:
            await self.config.client.clock.sleep(self.config.persist_consumer_offset_interval_s)
            self._store_positions()
            with contextlib.suppress(Exception):
                await self._core.offsets.persist_all()
