"""SYNC_FLUSH (and SYNC_MASTER) puts gathered per event-loop iteration: the puts whose producers wait for their fsync
(or their slave's acknowledgement),
made by the requests of one loop iteration, are appended with one ``put_messages`` call and wait for
one group commit together.

Each such put would otherwise pay for its own store call, flush future and waiter bookkeeping, which
is most of what a SYNC_FLUSH send costs the loop once the fsync is shared. The caller's messages keep
their order and stay all-or-nothing (the group is one batch). When the group is refused for one
caller's messages (too large, properties too long), every caller of that group puts alone, so one bad
message never fails another producer's put. A put that does not wait (or a wire batch) appends the
gathered ones first (``put_pending``): a producer's messages are stored in the order it sent them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from rocketq.broker.loop_dispatch import FlushWaits, LoopDispatch, timed_out_status
from rocketq.store import MessageStore, MessageToStore, PutMessageResult, PutStatus

_REFUSED_FOR_ONE = (PutStatus.MESSAGE_ILLEGAL, PutStatus.PROPERTIES_SIZE_EXCEEDED)

_Call = tuple[Sequence[MessageToStore], "asyncio.Future[PutMessageResult | None]"]


class GroupedPuts:
    """Use from the loop only."""

    def __init__(self, store: MessageStore, dispatch: LoopDispatch, waits: FlushWaits) -> None:
        self._store = store
        self._dispatch = dispatch
        self._waits = waits
        self._calls: list[_Call] = []

    async def put_and_wait(self, messages: Sequence[MessageToStore]) -> PutMessageResult:
        """Append ``messages`` with the other puts of this loop iteration and wait for the fsync that
        covers them (FLUSH_DISK_TIMEOUT after the store's sync flush timeout)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[PutMessageResult | None] = loop.create_future()
        if not self._calls:
            loop.call_soon(self._put)
        self._calls.append((messages, future))
        result = await future
        if result is None:  # the group was refused for some caller's messages: put alone
            return await self._waits.wait(self._append(messages))
        return result

    def put_pending(self) -> None:
        """Append the gathered puts now: a put that does not join the group calls this first, so a
        producer's messages are stored in the order it sent them."""
        if self._calls:
            self._put()

    def _append(self, messages: Sequence[MessageToStore]) -> PutMessageResult:
        """Append now; dispatched in the iteration's pass (nobody gains from it before the fsync)."""
        result = self._store.put_messages(messages, dispatch=False)
        self._dispatch.request(at_once=False)
        return result

    def _put(self) -> None:
        calls, self._calls = self._calls, []
        if not calls:  # put_pending() did it
            return
        if len(calls) == 1:
            messages = calls[0][0]
        else:
            messages = [message for call_messages, _ in calls for message in call_messages]
        result = self._append(messages)
        if not result.ok:
            alone = result.status in _REFUSED_FOR_ONE and len(calls) > 1
            for _, future in calls:
                if not future.done():
                    future.set_result(None if alone else result)
            return
        waiter = self._waits.watch(result)
        if waiter is None:
            _settle(calls, result)
        else:
            waiter.add_done_callback(lambda done: _flushed(done, calls, result))


def _flushed(waiter: asyncio.Future[int], calls: list[_Call], result: PutMessageResult) -> None:
    if waiter.cancelled():  # only when the loop is being torn down
        for _, future in calls:
            future.cancel()
        return
    error = waiter.exception()
    timed_out = timed_out_status(error)
    if timed_out is not None:
        result.status = timed_out
    elif error is not None:  # the flusher failed: every caller sees why
        for _, future in calls:
            if not future.done():
                future.set_exception(error)
        return
    _settle(calls, result)


def _settle(calls: list[_Call], result: PutMessageResult) -> None:
    """Resolve each caller's future with its share of the group's result."""
    if len(calls) == 1:
        future = calls[0][1]
        if not future.done():
            future.set_result(result)
        return
    start = 0
    for messages, future in calls:
        end = start + len(messages)
        if not future.done():
            sizes = result.sizes[start:end]
            future.set_result(
                PutMessageResult(
                    status=result.status,
                    physical_offsets=result.physical_offsets[start:end],
                    queue_offsets=result.queue_offsets[start:end],
                    sizes=sizes,
                    store_timestamp=result.store_timestamp,
                    wrote_bytes=sum(sizes),
                )
            )
        start = end
