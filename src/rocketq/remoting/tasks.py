"""Running coroutines on the loop: ``start_eagerly`` runs one at once until it first waits (most request
handlers never do), and ``cancel_and_wait`` stops background tasks."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import types
from collections.abc import Callable, Coroutine, Generator, Iterable
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


def start_eagerly(coroutine: Coroutine[Any, Any, Any], *, name: str | None = None) -> asyncio.Task[Any] | None:
    """Run ``coroutine`` now, on the calling thread (the running loop's), until it first waits.

    Returns None when it finished without waiting: no Task was made and no loop iteration passed,
    which is what a request handler that answers at once costs least with. Otherwise returns a Task of
    the running loop that carries on from where the coroutine stopped. This is Python 3.12's eager task
    start, for 3.11. Like a Task, the coroutine runs in a copy of the current context; an exception it
    raises before its first wait is logged, as an unawaited Task's would be.

    Unlike 3.12's, the part before the first wait runs as whatever the caller is, not as a Task of its
    own: there ``asyncio.current_task()`` is the caller's task (None in a protocol callback), and
    ``asyncio.timeout`` fails or, inside a task, would cancel the caller. So only code we own and have
    checked starts this way (the server's request handlers, called from ``buffer_updated``), never user
    callbacks."""
    context = contextvars.copy_context()
    try:
        waiting_on = context.run(coroutine.send, None)
    except StopIteration:
        return None
    except Exception:
        log.exception("%s failed", name or getattr(coroutine, "__qualname__", "coroutine"))
        return None
    return asyncio.get_running_loop().create_task(resume(coroutine, waiting_on), name=name, context=context)


async def resume(coroutine: Coroutine[Any, Any, T], waiting_on: Any) -> T:
    """Carry ``coroutine`` on from a first step run outside a Task (``start_eagerly`` here),
    ``waiting_on`` being what that step waits on; returns its value.
    (An ``async def``, so that interpreted callers can await it when this module is compiled.)"""
    return await carry_on(coroutine, waiting_on)


@types.coroutine
def carry_on(
    coroutine: Coroutine[Any, Any, T], waiting_on: Any, context: contextvars.Context | None = None
) -> Generator[Any, Any, T]:
    """Hand what ``coroutine`` waits on to the Task running us, and the Task's answers (a value, or an
    exception such as a cancellation) back to ``coroutine``, until it returns; its value is ours. Each
    of its steps runs in ``context`` when one is given (``rocketq.client.eager_tasks``'s batches)."""
    while True:
        step: Callable[[Any], Any]
        try:
            answer = yield waiting_on
            step = coroutine.send
        except GeneratorExit:
            coroutine.close()
            raise
        except BaseException as exc:
            answer, step = exc, coroutine.throw
        try:
            waiting_on = step(answer) if context is None else context.run(step, answer)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any] | None], *, ignore_errors: bool = False) -> None:
    """Cancel every task, then await each; a task's own exception is re-raised unless ``ignore_errors``.

    The tasks' cancellations are expected and not raised, but the caller's own is: a caller cancelled
    while it waits here (closing a consumer while its rebalance is dropping queues) stops, instead of
    carrying on as if only the awaited task had been cancelled."""
    pending = [task for task in tasks if task is not None]
    for task in pending:
        task.cancel()
    for task in pending:
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
        except Exception:
            if not ignore_errors:
                raise
