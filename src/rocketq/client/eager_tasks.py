"""``ListenerTasks``: each pulled batch's consuming coroutine run at once, on the caller's turn of the
loop, as the current task; a Task is only left behind for a coroutine that waits.

A push consumer hands each pulled batch to a coroutine listener as soon as it is decoded: a Task made
with ``create_task`` starts on the loop's next turn, after everything else already due (on a host
running a producer beside the consumer, that was the producer's next send, about 100 µs, before the
listener in most messages of ``rocketq bench consumer --only e2e_latency``). So the batch's first step
(up to its first wait, or to its end) runs here, before ``start`` returns.

During that step ``asyncio.current_task()`` is a real Task, which is the batch's own: a listener that
enters ``asyncio.timeout`` before its first wait has the timeout cancel that Task (and become
``TimeoutError``), and a listener that waits is carried on by that same Task, as one started the usual
way would be. The usual listener never waits: its batch is over when its first step is. For it, making
a Task (about 9,000 instructions with uvloop, and a step on the loop's next turn to end it) would buy
nothing, so the Task current during the step is a *spare*, kept for the next batch, as long as nothing
can tell: the step left no reference to it behind (its reference counts, strong and weak, are what
they were), added no callback to it and did not cancel it (a name it gave the Task stays with the
spare: names are for display). Otherwise, or when the step waits, the spare becomes that batch's
Task: it carries the coroutine on (or just ends, one loop turn later, as a Task whose coroutine ended in
its first step would), and the next batch gets a new spare. The spare waits on a future of its own
until it is handed a coroutine, and is cancelled by ``close``.

Each step of a batch's coroutine runs in a copy of the caller's context taken for that batch, so what a
listener sets in one batch's context is not seen by the next, whichever Task carries it.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
import types
import weakref
from asyncio import tasks
from collections.abc import Coroutine, Generator
from typing import Any, Final

from rocketq.remoting.tasks import carry_on

# bound once: compiled code reads a module's Final names as C statics, not by attribute lookups
_current_task: Final = tasks.current_task
_enter_task: Final = tasks._enter_task
_leave_task: Final = tasks._leave_task
_references: Final = sys.getrefcount
_weak_references: Final = weakref.getweakrefcount
_copy_context: Final = contextvars.copy_context

_DONE: Final = object()
"""What ``_first_step`` returns for a coroutine that ended in its first step."""


class ListenerTasks:
    """Starts coroutines of one running loop at once, as the current task (see the module). Use from
    that loop only."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        """``loop``: the running loop, which the caller keeps (``asyncio.get_running_loop()`` makes a
        getpid system call on Python 3.11, its fork check)."""
        self._loop = loop
        self._spare: asyncio.Task[Any] | None = None  # current during first steps, until it carries one
        self._handoff: _Handoff | None = None  # what the spare is waiting for
        self._closed = False

    def start(self, coroutine: Coroutine[Any, Any, object]) -> asyncio.Task[Any] | None:
        """Run ``coroutine``'s first step now, as the current task. Returns the Task that carries it on
        and finishes as it would have (with its exception, or cancelled), one loop turn later at the
        earliest; None when the coroutine ended in that step and nothing saw the Task it ran as."""
        loop = self._loop
        task, handoff = self._spare, self._handoff
        if task is None or handoff is None:
            handoff = self._handoff = _Handoff(loop.create_future())
            carry = _carry(handoff)
            carry.send(None)  # into its ``try`` (see ``_carry``)
            task = self._spare = loop.create_task(carry)
        context = _copy_context()
        caller = _current_task(loop)
        if caller is not None:
            _leave_task(loop, caller)
        references, weak_references = _references(task), _weak_references(task)
        _enter_task(loop, task)
        try:
            outcome = context.run(_first_step, coroutine)
        except BaseException as exc:  # the Task raises it when it runs
            outcome = _Raised(exc)
        _leave_task(loop, task)
        if caller is not None:
            _enter_task(loop, caller)
        if (
            outcome is _DONE
            and _references(task) == references
            and _weak_references(task) == weak_references
            and _unseen(task)
            and not self._closed
        ):
            return None  # the usual batch: over, and the spare is as it was
        self._spare = self._handoff = None
        handoff.coroutine, handoff.outcome, handoff.context = coroutine, outcome, context
        if not handoff.future.done():  # (cancelled: the listener cancelled its own task, see ``_carry``)
            handoff.future.set_result(None)
        return task

    def close(self) -> asyncio.Task[Any] | None:
        """Cancel the spare (returned, to be awaited); later batches each leave their Task behind."""
        self._closed = True
        task, self._spare, self._handoff = self._spare, None, None
        if task is not None:
            task.cancel()
        return task


def _unseen(task: asyncio.Task[Any]) -> bool:
    """Whether no callback was added to ``task`` and no cancellation asked of it."""
    view: Any = task  # (``_callbacks`` is None when there are none, whatever typeshed says)
    return not view._callbacks and not task.cancelling()


class _Handoff:
    """What the spare Task waits for: set when a batch's coroutine becomes its to carry on."""

    __slots__ = ("context", "coroutine", "future", "outcome")

    def __init__(self, future: asyncio.Future[None]) -> None:
        self.future = future
        self.coroutine: Coroutine[Any, Any, object] | None = None
        self.outcome: Any = None  # what the coroutine's first step waits on, _DONE, or _Raised
        self.context: contextvars.Context | None = None


class _Raised:
    """The exception a coroutine's first step raised."""

    __slots__ = ("exception",)

    def __init__(self, exception: BaseException) -> None:
        self.exception = exception


def _first_step(coroutine: Coroutine[Any, Any, object]) -> Any:
    """Run ``coroutine`` to its first wait (returns what it waits on) or to its end (``_DONE``).
    ``next`` with a default, rather than ``coroutine.send(None)``: a coroutine that ends in its first
    step (the usual listener) then ends without a StopIteration raised and caught here, which in
    compiled code costs a traceback entry (about 3,500 instructions per pulled batch)."""
    return next(coroutine.__await__(), _DONE)


async def _carry(handoff: _Handoff) -> None:
    """The spare Task's coroutine: wait to be handed a batch's coroutine, then end as it does.

    Cancelled while it waits: when no coroutine was handed over, the spare was closed; otherwise the
    coroutine's first step cancelled its own task (``asyncio.current_task().cancel()``), and the
    cancellation goes on to where that coroutine waits, as a Task's would. The spare is started by hand
    up to its first pause before its Task is made, so that a cancellation before the Task's first step
    lands inside the ``try`` too."""
    try:
        await _pause()
        await handoff.future
    except asyncio.CancelledError as cancelled:
        if handoff.coroutine is None or handoff.outcome is _DONE or isinstance(handoff.outcome, _Raised):
            raise
        await _carry_on(handoff.coroutine, handoff.context, None, cancelled)
        return
    outcome = handoff.outcome
    if outcome is _DONE:
        return
    if isinstance(outcome, _Raised):
        raise outcome.exception
    await _carry_on(handoff.coroutine, handoff.context, outcome, None)


@types.coroutine
def _pause() -> Generator[None, None, None]:
    """Give the loop a turn (a bare ``yield``, as ``asyncio.sleep(0)`` makes)."""
    yield


@types.coroutine
def _carry_on(
    coroutine: Coroutine[Any, Any, object] | None,
    context: contextvars.Context | None,
    waiting_on: Any,
    thrown: BaseException | None,
) -> Generator[Any, Any, None]:
    """Carry ``coroutine`` on from its first step (which waits on ``waiting_on``; ``thrown``: an
    exception to raise where it waits, instead): hand what it waits on to the Task running us and the
    Task's answers (a value, or an exception such as a cancellation) back to it, each of its steps run
    in ``context``, until it returns."""
    assert coroutine is not None and context is not None
    if thrown is not None:
        try:
            waiting_on = context.run(coroutine.throw, thrown)
        except StopIteration:
            return
    yield from carry_on(coroutine, waiting_on, context)
