"""Blocking facades over the async clients. Each runs its client on a private event-loop thread and
every method hops into that loop (like anyio's blocking portal): the clients' state belongs to that
loop, and only a call made on it can wake the loop's waiting tasks. Two exceptions: ``SyncProducer.send``
makes a send's first attempt on the caller's thread when it can (``rocketq.client.blocking_send``), and
``SyncPullConsumer.poll`` takes a batch prefetched on the caller's thread
(``PullConsumer.poll_nowait``, made for that) and waits for one there too (``PullConsumer.wait_buffered``)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, TypeVar

from mypy_extensions import mypyc_attr

from rocketq.client.blocking_send import BlockingSender
from rocketq.client.config import ConsumerConfig, ProducerConfig
from rocketq.client.errors import MQClientError
from rocketq.client.listener import Listener
from rocketq.client.message import Message, MessageExt, MessageQueue, SendResult
from rocketq.client.producer import Producer, QueueSelector, SendCallback
from rocketq.client.pull_consumer import PullConsumer
from rocketq.client.push_consumer import PushConsumer
from rocketq.client.selector import MessageSelector

if TYPE_CHECKING:
    from rocketq.client.sync_transactions import SyncTransactionGroup

T = TypeVar("T")

ITERATION_POLL_S = 1.0
"""How long one poll of an iteration over a ``SyncPullConsumer`` waits (then it checks it is still open)."""


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A uvloop loop where uvloop is installed (every install but a client-only one), as the asyncio
    clients get from ``rocketq.bench.running.run_loop`` or ``uvloop.run``: the blocking clients must
    not pay asyncio's slower selector loop on top of the hand-over."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class Handover:
    """One blocking call: the coroutine runs as a task on the loop, the caller waits on a bare lock that
    the task releases as its coroutine ends. (A ``concurrent.futures.Future`` wakes its waiter under a
    condition whose lock the loop thread still holds, so the caller woke twice per call; a done callback
    runs one loop iteration after the task ends, which the release in the task itself saves.)"""

    def __init__(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        self._coroutine = coroutine
        self._result: Any = None
        self._error: BaseException | None = None
        self._done = threading.Lock()
        self._done.acquire()

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the loop thread: run the coroutine."""
        loop.create_task(self._run())

    async def _run(self) -> None:
        try:
            self._result = await self._coroutine
        except BaseException as error:  # the caller raises it
            self._error = error
            if not isinstance(error, Exception | asyncio.CancelledError):
                raise  # (SystemExit, KeyboardInterrupt: the loop's too)
        finally:
            self._done.release()

    def wait(self, timeout: float | None) -> Any:
        """The coroutine's result (or its exception raised), once it has ended."""
        if not self._done.acquire(timeout=-1 if timeout is None else timeout):
            raise FutureTimeout(f"no result within {timeout} s")
        if self._error is not None:
            raise self._error
        return self._result


class LoopThread:
    """An event loop (uvloop's where installed) running on its own daemon thread."""

    def __init__(self, name: str) -> None:
        self._loop = new_event_loop()
        self._loop_thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._loop_thread.start()
        self._stopped = False

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        """Start ``coroutine`` on the loop thread; returns its ``concurrent.futures.Future``."""
        if self._stopped:
            coroutine.close()
            raise MQClientError(f"closed ({self._loop_thread.name})")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coroutine`` on the loop thread and wait for its result.

        Raises:
            TimeoutError: no result within ``timeout`` seconds (the coroutine goes on running).
        """
        if threading.current_thread() is self._loop_thread:
            coroutine.close()
            raise RuntimeError("LoopThread.call() from its own loop thread would deadlock")
        if self._stopped:
            coroutine.close()
            raise MQClientError(f"closed ({self._loop_thread.name})")
        handover = Handover(coroutine)
        self._loop.call_soon_threadsafe(handover.start, self._loop)
        result: T = handover.wait(timeout)
        return result

    def close_with(self, aclose: Coroutine[Any, Any, None]) -> None:
        """Run a client's ``aclose()`` on the loop thread, then stop the loop; nothing once stopped."""
        if self._stopped:
            aclose.close()
            return
        try:
            self.call(aclose)
        finally:
            self.stop()

    def run(self, function: Callable[[], T]) -> T:
        """Call ``function`` on the loop thread and wait for its result (once the loop has stopped, here:
        nothing else touches the client's state any more)."""
        if self._stopped:
            return function()
        return self.call(_call(function))

    def stop(self) -> None:
        self._stopped = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._loop_thread.join(timeout=10)
        if not self._loop.is_running():
            self._loop.close()


@mypyc_attr(allow_interpreted_subclasses=True)  # users may subclass it; see rocketq.native
class SyncProducer:
    """Blocking twin of ``Producer``: the same methods, without ``await``. Started when made (no
    ``start()``); ``close()`` or a ``with`` block ends it.

    ``SyncProducer(group="g", namesrv_addr="127.0.0.1:9876")``, or ``SyncProducer(ProducerConfig(...))``.
    Its producer runs on an event loop of its own, on a daemon thread; every method waits for that
    loop, so the object may be shared by threads. ``send`` makes its first attempt on the caller's thread
    when it can (``rocketq.client.blocking_send``), without waking the loop thread.
    """

    def __init__(
        self, config: ProducerConfig | None = None, *, group: str | None = None, namesrv_addr: str | None = None
    ) -> None:
        self._loop = LoopThread(name="rocketq-producer")
        self._producer = self._make_producer(config, group, namesrv_addr)
        self._blocking = BlockingSender(self._producer)
        try:
            self._loop.call(self._producer.start())
        except BaseException:
            self._loop.stop()
            raise

    def _make_producer(self, config: ProducerConfig | None, group: str | None, namesrv_addr: str | None) -> Producer:
        """The async producer this one runs (a subclass may run another kind)."""
        return Producer(config, group=group, namesrv_addr=namesrv_addr)

    def send(self, message: Message, *, timeout: float | None = None, idempotent: bool | None = None) -> SendResult:
        """Send and wait for the broker's answer, retrying on another broker when it fails (on the same
        one after a timeout when idempotent). ``idempotent``: None follows ``ProducerConfig.idempotent``."""
        blocking = self._blocking
        blocking.enter()
        try:
            outcome = blocking.send(message, timeout, idempotent)
            if isinstance(outcome, SendResult):
                return outcome
            return self._loop.call(outcome)
        finally:
            blocking.leave()

    def send_async(
        self,
        message: Message,
        callback: SendCallback | None = None,
        *,
        timeout: float | None = None,
        idempotent: bool | None = None,
    ) -> Future[SendResult]:
        """Start a send; returns a ``concurrent.futures.Future`` with its result. ``callback(result,
        error)``, when given, is called once the send ends, on the producer's loop thread (as
        ``Producer.send_async`` calls it on its loop): keep it short, and do not call this producer's
        blocking methods from it."""

        async def start() -> SendResult:
            return await self._producer.send_async(message, callback, timeout=timeout, idempotent=idempotent)

        return self._loop.submit(start())

    def send_oneway(self, message: Message, *, idempotent: bool | None = None) -> None:
        """Send without waiting for (or getting) an answer; one attempt."""
        self._loop.call(self._producer.send_oneway(message, idempotent=idempotent))

    def send_orderly(
        self,
        message: Message,
        *,
        sharding_key: str | None = None,
        selector: QueueSelector | None = None,
        arg: Any = None,
        timeout: float | None = None,
        idempotent: bool | None = None,
    ) -> SendResult:
        """Send to the queue chosen by ``selector(queues, message, arg)`` or by hashing ``sharding_key``:
        messages with the same key keep their order. No retry on another queue (that would break it)."""
        return self._loop.call(
            self._producer.send_orderly(
                message, sharding_key=sharding_key, selector=selector, arg=arg, timeout=timeout, idempotent=idempotent
            )
        )

    def send_batch(
        self,
        messages: Sequence[Message],
        *,
        queue: MessageQueue | None = None,
        timeout: float | None = None,
        idempotent: bool | None = None,
    ) -> SendResult:
        """Send several messages of one topic in one request (stored together, in order): to ``queue``,
        or to a queue chosen as for ``send``."""
        return self._loop.call(self._producer.send_batch(messages, queue=queue, timeout=timeout, idempotent=idempotent))

    def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        """The queues a send to ``topic`` can go to (the writable queues of its master brokers)."""
        return self._loop.call(self._producer.fetch_publish_queues(topic))

    def transaction_group(self, group_id: str, *, immunity_s: int | None = None) -> SyncTransactionGroup:
        """A grouped transaction sent and ended through this producer (``rocketq.client.transaction_group``)."""
        from rocketq.client.sync_transactions import SyncTransactionGroup
        from rocketq.client.transaction_group import DEFAULT_IMMUNITY_S, TransactionGroup

        group = TransactionGroup(self._producer, group_id, immunity_s=immunity_s or DEFAULT_IMMUNITY_S)
        return SyncTransactionGroup(self._loop, group)

    def close(self) -> None:
        """Wait for sends in flight, unregister from the brokers and stop the loop thread."""
        self._blocking.close()
        self._loop.close_with(self._producer.aclose())

    def __enter__(self) -> SyncProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@mypyc_attr(allow_interpreted_subclasses=True)  # users may subclass it; see rocketq.native
class SyncPushConsumer:
    """Blocking twin of ``PushConsumer``: a plain-function listener runs on the consume threads.

    ``SyncPushConsumer(config, listener)`` (or ``register_listener`` before ``start()``), then
    ``subscribe()`` and ``start()``; ``close()`` or a ``with`` block ends it. The listener gets a list of
    ``MessageExt`` and answers as described at ``rocketq.client.listener.Listener``.
    """

    def __init__(self, config: ConsumerConfig, listener: Listener | None = None, *, orderly: bool = False) -> None:
        self._loop = LoopThread(name="rocketq-push-consumer")
        self._consumer = PushConsumer(config, listener, orderly=orderly)

    def subscribe(self, topic: str, selector: MessageSelector | str = "*") -> None:
        """Subscribe (on the loop: after ``start()`` the consumer rebalances at once for a new topic)."""
        self._loop.run(lambda: self._consumer.subscribe(topic, selector))

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic`` (its queues are committed and dropped at the next rebalance, at once
        when started)."""
        self._loop.run(lambda: self._consumer.unsubscribe(topic))

    def register_listener(self, listener: Listener) -> None:
        """Consume with ``listener`` (before ``start()``; a listener given to the constructor is replaced)."""
        self._loop.run(lambda: self._consumer.register_listener(listener))

    def suspend(self) -> None:
        """Stop pulling (RocketMQ's ``suspend``): what is already cached is still consumed."""
        self._loop.run(self._consumer.suspend)

    def resume(self) -> None:
        """Pull again after ``suspend()``."""
        self._loop.run(self._consumer.resume)

    def start(self) -> SyncPushConsumer:
        """Join the group and start consuming. When no NameServer answers yet, it starts anyway and keeps
        asking (a WARNING says so), as RocketMQ's Java consumer does."""
        self._loop.call(self._consumer.start())
        return self

    @property
    def assigned_queues(self) -> set[MessageQueue]:
        """The queues the group's rebalancing gave this member."""
        return self._loop.run(lambda: self._consumer.assigned_queues)

    def consume_offset(self, queue: MessageQueue) -> int | None:
        """The offset this member has consumed ``queue`` up to, the one it commits next (None when it has
        none for the queue)."""
        return self._loop.run(lambda: self._consumer.consume_offset(queue))

    @property
    def client_id(self) -> str:
        """This member's id, as the brokers list it (``rocketq admin consumerConnection``)."""
        return self._consumer.client_id

    @property
    def consumed(self) -> int:
        """Messages consumed so far (the listener's successes and those sent back for a retry)."""
        return self._consumer.consumed

    def close(self) -> None:
        """Stop pulling, let listener calls in progress finish, commit offsets and leave the group."""
        self._loop.close_with(self._consumer.aclose())

    def __enter__(self) -> SyncPushConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@mypyc_attr(allow_interpreted_subclasses=True)  # users may subclass it; see rocketq.native
class SyncPullConsumer:
    """Blocking twin of ``PullConsumer``: ``poll()`` batches, or iterate (``for message in consumer``)
    for one message at a time until the consumer is closed.

    Either ``subscribe()`` (group rebalancing) or ``assign()`` queues, then ``start()``; ``close()`` or
    a ``with`` block ends it. With ``auto_commit`` the position after what ``poll()`` returned is
    committed periodically; else call ``commit()``.
    """

    def __init__(self, config: ConsumerConfig, *, auto_commit: bool = True) -> None:
        self._loop = LoopThread(name="rocketq-pull-consumer")
        self._consumer = self._loop.call(_build_pull_consumer(config, auto_commit))

    def subscribe(self, topic: str, selector: MessageSelector | str = "*") -> None:
        """Subscribe (on the loop: after ``start()`` the consumer rebalances at once for a new topic)."""
        self._loop.run(lambda: self._consumer.subscribe(topic, selector))

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic`` (subscribe() mode): its queues are committed and dropped."""
        self._loop.run(lambda: self._consumer.unsubscribe(topic))

    def pause(self, queues: Sequence[MessageQueue]) -> None:
        """Return nothing of ``queues`` from ``poll()`` until ``resume()`` (they stay assigned)."""
        self._loop.run(lambda: self._consumer.pause(queues))

    def resume(self, queues: Sequence[MessageQueue]) -> None:
        """Return ``queues``' messages from ``poll()`` again."""
        self._loop.run(lambda: self._consumer.resume(queues))

    def assign(self, queues: Sequence[MessageQueue], selector: MessageSelector | str = "*") -> None:
        """Consume exactly these queues (no group rebalancing), the messages ``selector`` picks."""
        self._loop.call(self._consumer.assign(queues, selector))

    def fetch_queues(self, topic: str) -> list[MessageQueue]:
        """All readable queues of a topic (to choose from for ``assign``)."""
        return self._loop.call(self._consumer.fetch_queues(topic))

    def start(self) -> SyncPullConsumer:
        """Start fetching. Subscribed, when no NameServer answers yet, it starts anyway and keeps asking."""
        self._loop.call(self._consumer.start())
        return self

    @property
    def client_id(self) -> str:
        """This member's id, as the brokers list it (``rocketq admin consumerConnection``)."""
        return self._consumer.client_id

    def poll(self, timeout: float = 5.0) -> list[MessageExt]:
        """The next batch of messages (one queue's pull), or [] when none came within ``timeout``.

        Taken on this thread (``PullConsumer.poll_nowait``), and when none is buffered this thread
        waits until the consumer's loop, having buffered one, wakes it (``PullConsumer.wait_buffered``):
        no call into the loop thread and back, which on a busy host cost more than the batch's messages."""
        consumer = self._consumer
        deadline = time.monotonic() + timeout
        while True:
            batch = consumer.poll_nowait()
            if batch:
                return batch
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            consumer.wait_buffered(remaining)

    def __iter__(self) -> Iterator[MessageExt]:
        """Every message, one at a time, as ``async for`` over a ``PullConsumer`` gives them; the loop
        ends once the consumer is closed (from another thread, or after ``break``)."""
        while True:
            try:
                batch = self.poll(ITERATION_POLL_S)
            except MQClientError:
                if self._consumer.running:
                    raise
                return  # closed (or never started)
            yield from batch

    def seek(self, queue: MessageQueue, offset: int) -> None:
        """Continue ``queue`` from ``offset``; what was prefetched from before is dropped."""
        self._loop.run(lambda: self._consumer.seek(queue, offset))

    def seek_to_begin(self, queue: MessageQueue) -> None:
        """Continue ``queue`` from its first offset still stored."""
        self._loop.call(self._consumer.seek_to_begin(queue))

    def seek_to_end(self, queue: MessageQueue) -> None:
        """Continue ``queue`` after its last message (only what arrives from now on)."""
        self._loop.call(self._consumer.seek_to_end(queue))

    def offset_for_timestamp(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """The first offset of ``queue`` stored at or after ``timestamp_ms`` (milliseconds since the epoch)."""
        return self._loop.call(self._consumer.offset_for_timestamp(queue, timestamp_ms))

    def commit(self) -> None:
        """Commit, for every assigned queue, the position after what poll() returned."""
        self._loop.call(self._consumer.commit())

    def committed(self, queue: MessageQueue) -> int:
        """The offset stored for ``queue`` (on the broker, or locally when broadcasting); -1 if none."""
        return self._loop.call(self._consumer.committed(queue))

    @property
    def paused(self) -> set[MessageQueue]:
        """The queues ``pause()`` holds back."""
        return self._loop.run(lambda: self._consumer.paused)

    @property
    def assignment(self) -> set[MessageQueue]:
        """The queues this consumer reads now (assigned, or given by the group's rebalancing)."""
        return self._loop.run(lambda: self._consumer.assignment)

    def close(self) -> None:
        """Commit (with ``auto_commit``), leave the group and stop the loop thread."""
        self._loop.close_with(self._consumer.aclose())

    def __enter__(self) -> SyncPullConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _build_pull_consumer(config: ConsumerConfig, auto_commit: bool) -> PullConsumer:
    return PullConsumer(config, auto_commit=auto_commit)  # built on the loop: it owns asyncio primitives


async def _call(function: Callable[[], T]) -> T:
    return function()
