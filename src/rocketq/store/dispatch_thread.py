"""The dispatcher's thread and its walk over a backlog, batch after batch (``Dispatcher.dispatch_batch``,
compiled): interpreted, so the GIL passes to the event loop between batches (compiled code never
hands it over by itself: see ``rocketq.native.modules``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rocketq.store.dispatch import Dispatcher

RETRY_INTERVAL_S = 0.5
"""How long the thread waits before trying a failed batch again."""


def walk(dispatcher: Dispatcher, end_offset: int) -> int:
    """Dispatch every record below ``end_offset``, a batch at a time (the caller holds the dispatch
    lock); returns how many records were dispatched. Raises what a batch raised."""
    count = 0
    while dispatcher.dispatched_offset < end_offset:
        applied = dispatcher.dispatch_batch(end_offset)
        if applied < 0:
            break
        count += applied
    return count


def run(dispatcher: Dispatcher) -> None:
    """The thread: dispatch what was written when woken (or every interval), then index what waits;
    a failure is logged once per episode and the batch tried again after ``RETRY_INTERVAL_S``."""
    while True:
        stopping = dispatcher.next_wake()
        try:
            dispatcher.dispatch_until(dispatcher.commit_log_end())
            dispatcher.catch_up_index()
        except Exception as exc:
            dispatcher.failed(exc)
            if not stopping:
                dispatcher.wait_retry()
        if stopping:
            return
