"""How a push consumer runs its listener on what it pulls (RocketMQ's ConsumeMessageConcurrentlyService):
a pulled batch is split into parts over the consume threads (a plain-function listener) or over
coroutine slots (a coroutine listener), at most ``consume_thread_max`` listener calls at a time; once
every part is done, failed messages go back to the broker (or are retried here when it does not take
them) and the queue's consumed offset moves forward. An orderly consumer calls the listener through
:meth:`ConsumeService.call_listener`, one message at a time."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from rocketq.client.config import ConsumerConfig
from rocketq.client.consume_threads import ConsumeThreads
from rocketq.client.consumer_core import ConsumerCore
from rocketq.client.eager_tasks import ListenerTasks
from rocketq.client.listener import CallTimes, Failed, Listener, listener_batches, worker_parts
from rocketq.client.listener_calls import ListenerCalls, ListenerRun
from rocketq.client.listener_slots import ListenerSlots
from rocketq.client.message import MessageExt
from rocketq.client.process_queue import ProcessQueue

log = logging.getLogger(__name__)

LOCAL_RETRY_DELAY_S = 5.0
SyncResult = asyncio.Future[Failed | None]
"""A consume thread's answer for one batch: its failed sub-batches, or None if its queue was dropped
before a thread got to it (nothing was consumed)."""


class ConsumeService:
    """Runs one push consumer's listener on its pulled batches and settles them (see the module)."""

    def __init__(self, config: ConsumerConfig, core: ConsumerCore, listener: Listener | None) -> None:
        self.config = config
        # messages per listener call, read once (the config is immutable): every pulled batch asks
        self._batch_size = max(1, config.consume_message_batch_max_size)
        self._core = core
        self.listener = listener
        self.listener_is_async = inspect.iscoroutinefunction(listener)
        self._consume_tasks: set[asyncio.Task[Any]] = set()
        self._on_thread: set[SyncResult] = set()  # batches handed to a thread whole, until settled
        self.slots = ListenerSlots(config.consume_thread_max)  # coroutine listeners running at once
        self._coroutine_parts = 0  # parts of pulled batches given to a coroutine listener, not yet done
        self._threads = ConsumeThreads(config.consume_thread_min, config.consume_thread_max, name="rocketq-consume")
        self._calls = ListenerCalls(config.group)  # concurrent: the listener calls running now
        self._call_times = CallTimes()  # how long the listener's calls take: how widely to spread a batch
        self.consumed = 0  # messages consumed (acknowledged or sent back)
        # the consumer's event loop, kept at the first batch: asyncio.get_running_loop() makes a getpid
        # system call (its fork check, Python 3.11), which every pulled batch would pay
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listener_tasks: ListenerTasks | None = None  # starts a coroutine listener's batches at once

    def set_listener(self, listener: Listener) -> None:
        self.listener = listener
        self.listener_is_async = inspect.iscoroutinefunction(listener)

    async def wait_for_running(self, timeout_s: float) -> None:
        """Let the batches being consumed finish, for ``timeout_s`` at most (and the spare Task that
        batches of a coroutine listener start in end: ``ListenerTasks``)."""
        spare = None if self._listener_tasks is None else self._listener_tasks.close()
        running: set[asyncio.Future[Any]] = self._consume_tasks | self._on_thread
        if spare is not None:
            running.add(spare)
        if running:
            await asyncio.wait(running, timeout=timeout_s)

    def close(self) -> None:
        """Stop the consume threads."""
        self._threads.close()

    def dispatch(self, process: ProcessQueue, messages: list[MessageExt]) -> None:
        """Consume a pulled batch in its own task (a plain-function listener runs on a consume thread).
        A coroutine listener's batch starts at once (``ListenerTasks``): the listener runs before the
        caller goes on, not after whatever else the loop has ready (such as a producer's next send),
        and a batch that is over in that first step leaves no Task behind."""
        if self.listener_is_async:
            if len(messages) <= self._batch_size and self.slots.take_now():
                # the usual pull: one part (``worker_parts`` cuts no fewer messages than one call's),
                # a slot free; the listener's calls and the settling in one coroutine
                self._coroutine_parts += 1
                self._track(self.call_listener(messages, process, settling=True), eager=True)
            else:
                self._track(self._consume(process, messages), eager=True)
        else:  # consume threads are woken now, while the loop goes on to send the queue's next pull
            parts = [
                self._to_thread(process, part)
                for part in worker_parts(
                    messages,
                    self.config.consume_message_batch_max_size,
                    self._threads.spare,
                    self._call_times.calls_per_part(),
                )
            ]
            if len(parts) == 1:  # the usual hand-over: settled from the part's callback, without a task
                self._on_thread.add(parts[0])
                parts[0].add_done_callback(lambda part: self._settle_part(process, messages, part))
            else:
                self._track(self._consumed_on_thread(process, messages, parts))

    def _track(self, consuming: Coroutine[Any, Any, object], *, eager: bool = False) -> None:
        """Run ``consuming`` in a task that ``aclose`` waits for (``eager``: started at once)."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        if eager:
            starter = self._listener_tasks
            if starter is None:
                starter = self._listener_tasks = ListenerTasks(loop)
            task = starter.start(consuming)
            if task is None:  # over in its first step (the usual batch)
                return
        else:
            task = loop.create_task(consuming)
        self._consume_tasks.add(task)
        task.add_done_callback(self._consume_tasks.discard)

    def _settle_part(self, process: ProcessQueue, messages: list[MessageExt], part: SyncResult) -> None:
        """A pulled batch handed to a thread whole is done: settled here when its listener calls all
        succeeded, by a task when some failed (they go back to the broker)."""
        self._on_thread.discard(part)
        if part.cancelled():  # the threads were closed first
            return
        if part.exception() is not None:
            log.error("consuming %d message(s) of %s failed", len(messages), process.queue, exc_info=part.exception())
            return
        failed = part.result()
        if failed:
            self._track(self._settle(process, messages, failed))
        elif failed is not None:  # (None: the queue was dropped meanwhile)
            self.finish(process, messages)

    def _run_listener(self, messages: list[MessageExt], process: ProcessQueue | None) -> Failed | None:
        """Call a plain-function listener on each sub-batch (on a consume thread); returns the failed
        sub-batches, or None when ``process`` was dropped before the last call. Never raises."""
        listener: Callable[[list[MessageExt]], Any] = self.listener  # type: ignore[assignment]
        run = ListenerRun(self._calls, self._call_times, process, self._core.stats)
        try:
            for batch in listener_batches(messages, self._batch_size):
                if not run.starting(batch):
                    return None
                try:
                    result = listener(batch)
                except Exception:
                    result = run.raised(batch)
                run.returned(batch, result)
        finally:
            run.close()
        return run.failed

    def _to_thread(self, process: ProcessQueue | None, messages: list[MessageExt]) -> SyncResult:
        """Hand ``messages`` to a consume thread; a batch of ``process`` is skipped (None) if that queue is
        dropped before a thread takes it (``_run_listener`` checks before each call)."""
        return self._threads.call(lambda: self._run_listener(messages, process))

    async def call_listener(
        self, messages: list[MessageExt], process: ProcessQueue | None = None, *, settling: bool = False
    ) -> Failed | None:
        """The listener on every sub-batch of ``messages``, on a consume thread (``_run_listener``) or
        awaited here; returns the sub-batches that failed, or None when ``process`` was dropped before
        the last call. Calls on a ``process``'s messages can be given up when overdue.

        ``settling`` (a coroutine listener only): ``messages`` are a pulled batch of ``process``, whole,
        for which ``dispatch`` took a slot and counted a coroutine part. The slot and the part are given
        back after the calls and the batch is settled here, as ``_consume`` does for any other batch:
        the usual pull is one coroutine of ours between its read and the listener, not two."""
        if not self.listener_is_async:
            return await self._to_thread(process, messages)
        listener: Callable[[list[MessageExt]], Any] = self.listener  # type: ignore[assignment]
        run = ListenerRun(self._calls, self._call_times, process, self._core.stats)
        failed: Failed | None = None
        try:
            for batch in listener_batches(messages, self._batch_size):
                if not run.starting(batch):
                    break
                try:
                    result = await listener(batch)
                except Exception:
                    result = run.raised(batch)
                run.returned(batch, result)
            else:
                failed = run.failed
        finally:
            run.close()
            if settling:
                self.slots.release()
                self._coroutine_parts -= 1
        if settling and process is not None and failed is not None:  # (as ``_consume`` settles)
            if failed:
                await self._settle(process, messages, failed)
            else:
                self.finish(process, messages)
        return failed

    async def _consume(self, process: ProcessQueue, messages: list[MessageExt]) -> None:
        """A pulled batch through a coroutine listener, in parts over the free slots (at most
        ``consume_thread_max`` listener calls at a time), settled once every part is done.

        Not the usual pull (one part, a slot free), which ``dispatch`` hands to ``call_listener``
        itself (``settling``): a batch cut in parts, or one that waits for a slot. A batch whose calls
        all succeeded is settled by a plain call (``finish``), without ``_settle``'s coroutine."""
        parts = worker_parts(
            messages,
            self.config.consume_message_batch_max_size,
            self.config.consume_thread_max - self._coroutine_parts,
            self._call_times.calls_per_part(),
        )
        failed: Failed | None
        self._coroutine_parts += len(parts)
        try:
            if len(parts) > 1:
                outcomes = await asyncio.gather(*(self.call_in_slot(part, process) for part in parts))
                # (None: a part was skipped, the queue was dropped: nothing to settle)
                failed = None if None in outcomes else [call for part in outcomes if part for call in part]
            else:
                failed = await self.call_in_slot(messages, process)
        finally:
            self._coroutine_parts -= len(parts)
        if failed:
            await self._settle(process, messages, failed)
        elif failed is not None:
            self.finish(process, messages)

    async def call_in_slot(self, part: list[MessageExt], process: ProcessQueue | None = None) -> Failed | None:
        """``call_listener`` in one of the ``consume_thread_max`` slots (waiting for one when all are
        taken): the concurrent consumer's parts of a pulled batch, and the orderly one's messages."""
        slots = self.slots
        if not slots.take_now():  # (nearly always free: taken without a wait)
            await slots.take()
        try:  # (a queue dropped meanwhile: ``call_listener`` checks before each call)
            return await self.call_listener(part, process)
        finally:
            slots.release()

    async def _consumed_on_thread(
        self, process: ProcessQueue, messages: list[MessageExt], parts: list[SyncResult]
    ) -> None:
        """A pulled batch handed to the consume threads: settled once threads have run the listener on
        all its parts, unless one was skipped (the queue was dropped meanwhile)."""
        outcomes = [await part for part in parts]
        if None not in outcomes:
            await self._settle(process, messages, [call for part in outcomes if part for call in part])

    async def _settle(self, process: ProcessQueue, messages: list[MessageExt], failed: Failed) -> None:
        """After the listener: failed messages back to the broker (or retried here), the queue's
        consumed offset forward."""
        finished = messages
        retry_here: list[MessageExt] = []
        if failed:
            failed_offsets = {message.queue_offset for batch, _ in failed for message in batch}
            finished = [message for message in messages if message.queue_offset not in failed_offsets]
            for batch, level in failed:
                if self._core.clustering:
                    for message in batch:  # back to the broker, which redelivers it through the retry topic
                        (finished if await self._core.send_back(message, level) else retry_here).append(message)
                else:
                    log.warning("broadcasting: %d failed message(s) of %s are dropped", len(batch), process.queue)
                    finished.extend(batch)
        if retry_here:  # the broker did not take them back: retry here, keep their offsets pending
            asyncio.get_running_loop().call_later(LOCAL_RETRY_DELAY_S, self._retry_locally, process, retry_here)
        self.finish(process, finished)

    def finish(self, process: ProcessQueue, finished: list[MessageExt]) -> None:
        """Count ``finished`` as consumed and move its queue's consumed offset forward."""
        self.consumed += len(finished)
        offset = process.finish(finished)
        if offset >= 0 and not process.dropped:
            self._core.offsets.update(process.queue, offset)

    async def give_up_overdue_calls(self) -> None:
        """Every so often, give up listener calls running longer than ``consume_timeout_s``."""
        timeout = self.config.consume_timeout_s
        while True:
            await self.config.client.clock.sleep(min(max(timeout / 4, 0.05), 60.0))
            await self._calls.give_up_overdue(self._core, timeout)

    def _retry_locally(self, process: ProcessQueue, messages: list[MessageExt]) -> None:
        if not process.dropped:
            self.dispatch(process, messages)
