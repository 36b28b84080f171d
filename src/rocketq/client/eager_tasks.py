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
from typing import Any

from rocketq.remoting.tasks import resume


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
    first: list[Any] = []  # the first step's outcome: ("waits", what it waits on), ("done", None) or ("raised", exc)
    task = loop.create_task(_after_first_step(coroutine, first), context=context)
    caller = tasks.current_task(loop)
    if caller is not None:
        tasks._leave_task(loop, caller)
    tasks._enter_task(loop, task)
    try:
        first.append(("waits", context.run(coroutine.send, None)))
    except StopIteration:
        first.append(("done", None))
    except BaseException as exc:  # the Task raises it when it runs
        first.append(("raised", exc))
    finally:
        tasks._leave_task(loop, task)
        if caller is not None:
            tasks._enter_task(loop, caller)
    return task


async def _after_first_step(coroutine: Coroutine[Any, Any, None], first: list[Any]) -> None:
    kind, value = first[0]
    if kind == "raised":
        raise value
    if kind == "waits":
        await resume(coroutine, value)
