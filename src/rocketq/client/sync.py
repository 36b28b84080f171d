"""Blocking facades over the async clients. Each runs its client on a private event-loop thread and
every method hops into that loop (like anyio's blocking portal)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from rocketq.client.config import ProducerConfig
from rocketq.client.message import Message, SendResult
from rocketq.client.producer import Producer, QueueSelector

T = TypeVar("T")


class LoopThread:
    """An event loop running on its own daemon thread."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coroutine`` on the loop thread and wait for its result."""
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise RuntimeError("LoopThread.call() from its own loop thread would deadlock")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(timeout)

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._loop.is_running():
            self._loop.close()


class SyncProducer:
    """Blocking twin of ``Producer``: the same methods, without ``await``."""

    def __init__(
        self, config: ProducerConfig | None = None, *, group: str | None = None, namesrv_addr: str | None = None
    ) -> None:
        self._loop = LoopThread(name="rocketq-producer")
        self._producer = Producer(config, group=group, namesrv_addr=namesrv_addr)
        try:
            self._loop.call(self._producer.start())
        except BaseException:
            self._loop.stop()
            raise

    def send(self, message: Message, *, timeout: float | None = None) -> SendResult:
        return self._loop.call(self._producer.send(message, timeout=timeout))

    def send_async(self, message: Message, *, timeout: float | None = None) -> Future[SendResult]:
        """Start a send; returns a ``concurrent.futures.Future`` with its result."""

        async def start() -> SendResult:
            return await self._producer.send_async(message, timeout=timeout)

        return asyncio.run_coroutine_threadsafe(start(), self._loop._loop)

    def send_oneway(self, message: Message) -> None:
        self._loop.call(self._producer.send_oneway(message))

    def send_orderly(
        self,
        message: Message,
        *,
        sharding_key: str | None = None,
        selector: QueueSelector | None = None,
        arg: Any = None,
        timeout: float | None = None,
    ) -> SendResult:
        return self._loop.call(
            self._producer.send_orderly(message, sharding_key=sharding_key, selector=selector, arg=arg, timeout=timeout)
        )

    def send_batch(self, messages: Sequence[Message], *, timeout: float | None = None) -> SendResult:
        return self._loop.call(self._producer.send_batch(messages, timeout=timeout))

    def close(self) -> None:
        try:
            self._loop.call(self._producer.aclose())
        finally:
            self._loop.stop()

    def __enter__(self) -> SyncProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
