"""A producer's automatic batching (``ProducerConfig.auto_batch``; docs/producer-path.md): a plain send
made while a request to its topic is in flight waits for the end of the loop's turn and leaves in one
batch request with the others made in that turn, each caller getting its own ``SendResult``.

The bookkeeping (what may wait, the caps, each send's share of the answer) is
``rocketq.client.send_accumulator``; this module does the sending, through the ``Producer`` functions it
is given: the same preparation, and the same retries as ``send_batch``."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from librt.strings import BytesWriter

from rocketq.client.errors import MQClientError
from rocketq.client.message import Message, MessageQueue, SendResult
from rocketq.client.send_accumulator import Accumulator, WaitingSend, split_result
from rocketq.client.send_checks import SendSettings, send_request
from rocketq.protocol import RemotingCommand
from rocketq.protocol.batch import write_item

Prepare = Callable[[Message], tuple[bytes, str, int, str]]
"""``Producer._prepare`` of a plain message: (body, properties text, sys_flag, unique id)."""
SendAlone = Callable[[Message, float | None, int, bool | None], Awaitable[SendResult]]
"""``Producer._send_message``: one message in its own request, with retries."""
SendWithRetries = Callable[
    [str, Callable[[MessageQueue], RemotingCommand], str, float | None, int, bool], Awaitable[SendResult]
]
"""``Producer._send_with_retries``: a request built per queue, tried up to ``1 + retries`` times."""


class AutoBatcher:
    """The waiting sends of one producer; use from the producer's event loop."""

    def __init__(
        self,
        settings: SendSettings,
        accumulator: Accumulator,
        prepare: Prepare,
        send_alone: SendAlone,
        send_with_retries: SendWithRetries,
        pending: set[asyncio.Task[Any]],
    ) -> None:
        self._settings = settings  # the producer's
        self.accumulator = accumulator
        self._prepare = prepare
        self._send_alone = send_alone
        self._send_with_retries = send_with_retries
        self._pending = pending  # the producer's tasks in flight, which its aclose waits for
        self.loop: asyncio.AbstractEventLoop | None = None
        """The producer's event loop, set when it starts (``asyncio.get_running_loop()`` makes a getpid
        system call on Python 3.11, which every waiting send would pay)."""

    def _loop(self) -> asyncio.AbstractEventLoop:
        loop = self.loop
        return asyncio.get_running_loop() if loop is None else loop

    def busy(self, topic: str) -> bool:
        """Whether a request to ``topic`` is in flight (a send made now would wait for a batch)."""
        return self.accumulator.busy(topic)

    async def send(self, message: Message, timeout: float | None, retries: int) -> SendResult:
        """Send a plain (coalescible) message: alone on an idle topic; else, checked first, in the next
        batch of its topic (alone still when it is too large for a batch)."""
        accumulator = self.accumulator
        topic = message.topic
        if accumulator.busy(topic):
            waiting = self._waiting_send(message, timeout, retries)
            if waiting is not None:
                if accumulator.add(topic, waiting):
                    self._loop().call_soon(self.send_waiting, topic)
                return await waiting.future
        accumulator.started(topic)
        try:
            return await self._send_alone(message, timeout, retries, False)
        finally:
            accumulator.finished(topic)

    def flush(self) -> None:
        """Send every waiting send now (the producer is closing)."""
        for topic in self.accumulator.topics_waiting():
            self.send_waiting(topic)

    def _waiting_send(self, message: Message, timeout: float | None, retries: int) -> WaitingSend | None:
        """``message`` checked and ready to wait for a batch (ValidationError when it cannot travel), or
        None when it is too large for one and goes alone."""
        body, properties, _, unique_id = self._prepare(message)  # (coalescible: neither compressed nor a half)
        loop = self._loop()
        future: asyncio.Future[SendResult] = loop.create_future()
        # the loop's clock, as asyncio's own timeouts: uvloop's reads no clock (the time its turn began)
        deadline = loop.time() + (timeout or self._settings.send_msg_timeout_s)
        waiting = WaitingSend(body, properties, message.flag, unique_id, future, deadline, retries)
        return waiting if self.accumulator.fits(waiting) else None

    def send_waiting(self, topic: str) -> None:
        """Send the batches of the sends waiting on ``topic`` (run at the end of the loop's turn)."""
        accumulator = self.accumulator
        loop = self._loop()
        for batch in accumulator.take(topic):
            accumulator.started(topic)
            task = loop.create_task(self._send_coalesced(topic, batch))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

    async def _send_coalesced(self, topic: str, batch: list[WaitingSend]) -> None:
        """Send ``batch`` as one request (a lone message as a plain send), retried as ``send_batch`` is
        within its earliest send's deadline, and answer each of its sends."""
        settings = self._settings
        try:
            ids = ",".join([waiting.unique_id for waiting in batch])
            remaining = min([waiting.deadline for waiting in batch]) - self._loop().time()
            retries = min([waiting.retries for waiting in batch])
            first = batch[0]
            body = _batch_body(batch) if len(batch) > 1 else None

            def request(queue: MessageQueue) -> RemotingCommand:
                if body is None:  # a lone message: a plain send
                    return send_request(settings, queue, first.body, first.properties, 0, first.flag)
                return send_request(settings, queue, body, "", 0, 0, batch=True)

            try:
                if remaining <= 0:
                    raise MQClientError(f"send to topic {topic!r} timed out while waiting for its batch")
                result = await self._send_with_retries(topic, request, ids, remaining, retries, False)
            except asyncio.CancelledError:
                for waiting in batch:
                    waiting.future.cancel()
                raise
            except Exception as exc:
                for waiting in batch:
                    if not waiting.future.done():
                        waiting.future.set_exception(exc)
                return
            results = split_result(result, batch) if len(batch) > 1 else [result]
            for waiting, own in zip(batch, results, strict=True):
                if not waiting.future.done():
                    waiting.future.set_result(own)
        finally:
            self.accumulator.finished(topic)


def _batch_body(batch: list[WaitingSend]) -> bytes:
    """The batch body of the waiting sends ``batch``, in order."""
    out = BytesWriter()
    for waiting in batch:
        write_item(out, waiting.body, waiting.properties, waiting.flag)
    return out.getvalue()
