"""``start_in_task``: a Task whose first step runs at once, on the caller's turn of the loop (Python
3.12's eager task start, for 3.11).

A push consumer hands each pulled batch to a coroutine listener in a Task of its own, so that the
listener can take its time while the queue's next pull goes out, and so that revoking the queue (which
cancels its pull loop) never cancels the listener. A Task made with ``create_task`` starts on the loop's
next turn, after everything else already due: on a host running a producer beside the consumer, that
was the producer's next send (about 100 µs) before the listener in most messages of ``rocketq bench
consumer --only e2e_latency``. Started here, the listener runs as soon as the batch is decoded.

Unlike ``rocketq.remoting.tasks.start_eagerly`` (for the server's own handlers), the first step runs
as the new Task: ``asyncio.current_task()`` is that Task, so a listener that enters ``asyncio.timeout``
before its first wait has the timeout cancel its own Task (and become ``TimeoutError``), as it would in
a Task started the usual way.
"""

from __future__ import annotations

import asyncio
import contextvars
from asyncio import tasks
from collections.abc import Coroutine
from typing import Any, Final

from rocketq.remoting.tasks import resume

# bound once: compiled code reads a module's Final names as C statics, not by attribute lookups
_current_task: Final = tasks.current_task
_enter_task: Final = tasks._enter_task
_leave_task: Final = tasks._leave_task


_DONE: Final = object()
"""What ``_first_step`` returns for a coroutine that ended in its first step."""


def start_in_task(
    coroutine: Coroutine[Any, Any, None], loop: asyncio.AbstractEventLoop | None = None
) -> asyncio.Task[None]:
    """A Task of the running loop running ``coroutine``, whose first step (up to its first wait, or
    to its end) has already run when this returns. The Task finishes as it would have (with the
    coroutine's exception, or cancelled), one loop turn later at the earliest. ``loop``: the running
    loop, when the caller keeps it (``asyncio.get_running_loop()`` makes a getpid system call on
    Python 3.11, its fork check)."""
    if loop is None:
        loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    first: list[Any] = []  # the first step's outcome: what it waits on, _DONE, or _Raised
    task = loop.create_task(_after_first_step(coroutine, first), context=context)
    caller = _current_task(loop)
    if caller is not None:
        _leave_task(loop, caller)
    _enter_task(loop, task)
    try:
        first.append(context.run(_first_step, coroutine))
    except BaseException as exc:  # the Task raises it when it runs
        first.append(_Raised(exc))
    finally:
        _leave_task(loop, task)
        if caller is not None:
            _enter_task(loop, caller)
    return task


class _Raised:
    """The exception a coroutine's first step raised."""

    __slots__ = ("exception",)

    def __init__(self, exception: BaseException) -> None:
        self.exception = exception


def _first_step(coroutine: Coroutine[Any, Any, None]) -> Any:
    """Run ``coroutine`` to its first wait (returns what it waits on) or to its end (``_DONE``).
    ``next`` with a default, rather than ``coroutine.send(None)``: a coroutine that ends in its first
    step (the usual listener) then ends without a StopIteration raised and caught here, which in
    compiled code costs a traceback entry (about 3,500 instructions per pulled batch)."""
    return next(coroutine.__await__(), _DONE)


async def _after_first_step(coroutine: Coroutine[Any, Any, None], first: list[Any]) -> None:
    outcome = first[0]
    if outcome is _DONE:
        return
    if isinstance(outcome, _Raised):
        raise outcome.exception
    await resume(coroutine, outcome)
