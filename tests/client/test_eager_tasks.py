"""``ListenerTasks``: the first step runs before ``start`` returns, as the current task; a coroutine that
waits is carried on by that Task, which then behaves as one made with ``create_task`` (result,
exception, cancellation, timeouts, context); one that ends in its first step leaves no Task behind
unless something could tell (it kept the Task, added a callback to it, cancelled it)."""

from __future__ import annotations

import asyncio
import contextvars
import weakref
from typing import Any

import pytest

from rocketq.client.eager_tasks import ListenerTasks

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="caller")


def starter() -> ListenerTasks:
    return ListenerTasks(asyncio.get_running_loop())


async def test_first_step_runs_at_once_as_the_task_that_carries_it_on() -> None:
    seen: list[object] = []
    release = asyncio.Event()

    async def work() -> None:
        seen.append(asyncio.current_task())
        await release.wait()
        seen.append(asyncio.current_task())

    caller = asyncio.current_task()
    task = starter().start(work())
    assert task is not None and task.get_loop() is asyncio.get_running_loop()
    assert seen == [task]  # ran before start returned, as its own Task
    assert asyncio.current_task() is caller
    release.set()
    await task
    assert seen == [task, task] and task.result() is None


async def test_coroutines_that_never_wait_leave_no_task_and_run_as_one_spare() -> None:
    seen: list[int] = []
    tasks = starter()

    async def work(number: int) -> None:
        current = asyncio.current_task()
        assert isinstance(current, asyncio.Task)  # a real Task
        seen.append(id(current))
        del current

    for number in range(3):
        assert tasks.start(work(number)) is None
    assert len(seen) == 3 and len(set(seen)) == 1  # the same spare Task was current for each
    assert tasks.close() is not None


async def test_a_task_kept_by_the_coroutine_is_its_own_and_finishes() -> None:
    kept: list[asyncio.Task[Any] | None] = []
    tasks = starter()

    async def work() -> None:
        kept.append(asyncio.current_task())

    first = tasks.start(work())
    assert first is not None and kept == [first]
    second = tasks.start(work())
    assert second is not None and second is not first and kept == [first, second]
    await first
    await second
    assert first.done() and second.done()


async def test_a_task_the_coroutine_keeps_a_weak_reference_to_is_its_own_and_finishes() -> None:
    kept: list[weakref.ref[asyncio.Task[Any]]] = []

    async def work() -> None:
        task = asyncio.current_task()
        assert task is not None
        kept.append(weakref.ref(task))

    task = starter().start(work())
    assert task is not None and kept[0]() is task
    await task
    assert task.done()


async def test_a_callback_added_to_the_task_is_called_once_it_finishes() -> None:
    called: list[str] = []

    async def work() -> None:
        task = asyncio.current_task()
        assert task is not None
        task.add_done_callback(lambda _: called.append("done"))

    task = starter().start(work())
    assert task is not None and called == []
    await task
    await asyncio.sleep(0)  # (done callbacks are scheduled)
    assert called == ["done"]


async def test_a_timeout_entered_and_left_in_the_first_step_leaves_no_task() -> None:
    async def work() -> None:
        async with asyncio.timeout(10):
            pass

    tasks = starter()
    assert tasks.start(work()) is None
    assert tasks.start(work()) is None
    tasks.close()


async def test_an_exception_of_the_first_step_is_the_tasks() -> None:
    async def work() -> None:
        raise ValueError("boom")

    task = starter().start(work())
    assert task is not None
    with pytest.raises(ValueError, match="boom"):
        await task


async def test_a_first_step_that_raises_a_stop_iteration_or_a_base_exception_is_the_tasks() -> None:
    """The first step is run without a StopIteration of its own (``next`` with a default): one the
    coroutine raises is still its error (as a RuntimeError, as Python makes it), and a BaseException
    that is not an Exception is still the Task's."""

    async def stops() -> None:
        raise StopIteration("inside")

    class Stop(BaseException):
        pass

    async def exits() -> None:
        raise Stop

    tasks = starter()
    stopped, exited = tasks.start(stops()), tasks.start(exits())
    assert stopped is not None and exited is not None and stopped is not exited
    with pytest.raises(RuntimeError, match="StopIteration"):
        await stopped
    with pytest.raises(Stop):
        await exited


async def test_a_first_step_that_waits_on_a_done_future_carries_on_with_its_value() -> None:
    """A wait that is over at once is still a wait: the Task carries the coroutine on, with the value."""
    values: list[int] = []
    ready = asyncio.get_running_loop().create_future()
    ready.set_result(7)

    async def work() -> int:
        values.append(await ready)
        await asyncio.sleep(0)  # a wait that yields to the loop
        values.append(8)
        return 9

    task = starter().start(work())  # type: ignore[arg-type]  # (its value is not the Task's)
    assert task is not None and values == [7]
    await task
    assert values == [7, 8] and task.result() is None


async def test_a_timeout_entered_in_the_first_step_cancels_only_its_own_task() -> None:
    outcome: list[str] = []
    never = asyncio.Event()

    async def work() -> None:
        try:
            async with asyncio.timeout(0.01):
                await never.wait()
        except TimeoutError:
            outcome.append("timed out")

    async def caller() -> str:
        task = starter().start(work())
        assert task is not None
        await task
        return "caller carried on"

    assert await asyncio.create_task(caller()) == "caller carried on"
    assert outcome == ["timed out"]


async def test_cancelling_the_task_reaches_the_coroutine_where_it_waits() -> None:
    cleaned: list[str] = []
    started = asyncio.Event()

    async def work() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.append("finally")

    task = starter().start(work())
    assert task is not None and started.is_set()
    await asyncio.sleep(0)  # the Task takes over the wait
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == ["finally"]


@pytest.mark.parametrize("waits", [False, True])
async def test_a_coroutine_that_cancels_its_own_task_has_it_cancelled(waits: bool) -> None:
    """Cancelled in its first step, by itself: the Task ends cancelled, and a coroutine that then waits
    gets the cancellation where it waits."""
    cleaned: list[str] = []
    tasks = starter()
    await asyncio.sleep(0)  # (a spare that already waits, and one not yet started, below)

    async def work() -> None:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        del task
        if waits:
            try:
                await asyncio.Event().wait()
            finally:
                cleaned.append("finally")

    for _ in range(2):
        task = tasks.start(work())
        assert task is not None
        with pytest.raises(asyncio.CancelledError):
            await task
        assert task.cancelled()
    assert cleaned == (["finally", "finally"] if waits else [])


async def test_each_coroutine_runs_in_a_copy_of_the_callers_context() -> None:
    tasks = starter()

    async def never_waits() -> None:
        assert VAR.get() == "caller"
        VAR.set("first batch")

    async def waits() -> None:
        assert VAR.get() == "caller"
        VAR.set("task")
        await asyncio.sleep(0)
        assert VAR.get() == "task"

    assert tasks.start(never_waits()) is None
    assert tasks.start(never_waits()) is None  # (it asserts the first one's value is not seen)
    task = tasks.start(waits())
    assert task is not None
    await task
    assert VAR.get() == "caller"


async def test_after_close_every_coroutine_leaves_its_task() -> None:
    tasks = starter()
    ran: list[int] = []

    async def work() -> None:
        ran.append(1)

    assert tasks.start(work()) is None
    spare = tasks.close()
    assert spare is not None
    with pytest.raises(asyncio.CancelledError):
        await spare
    task = tasks.start(work())
    assert task is not None and ran == [1, 1]
    await task
    assert task.done() and not task.cancelled()
