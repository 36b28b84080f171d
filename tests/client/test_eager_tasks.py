"""``start_in_task``: the first step runs before it returns, as the new Task, and the Task then behaves
as one made with ``create_task`` (result, exception, cancellation, timeouts, context)."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from rocketq.client.eager_tasks import start_in_task

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="caller")


@pytest.mark.parametrize("loop_given", [False, True])
async def test_first_step_runs_at_once_as_the_new_task(loop_given: bool) -> None:
    seen: list[object] = []
    release = asyncio.Event()

    async def work() -> None:
        seen.append(asyncio.current_task())
        await release.wait()
        seen.append(asyncio.current_task())

    caller = asyncio.current_task()
    task = start_in_task(work(), asyncio.get_running_loop() if loop_given else None)
    assert task.get_loop() is asyncio.get_running_loop()
    assert seen == [task]  # ran before start_in_task returned, as its own Task
    assert asyncio.current_task() is caller
    release.set()
    await task
    assert seen == [task, task]


async def test_a_coroutine_that_never_waits_finishes_in_its_first_step() -> None:
    done: list[int] = []

    async def work() -> None:
        done.append(1)

    task = start_in_task(work())
    assert done == [1]
    await task
    assert task.done() and task.exception() is None


async def test_an_exception_of_the_first_step_is_the_tasks() -> None:
    async def work() -> None:
        raise ValueError("boom")

    task = start_in_task(work())
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

    stopped, exited = start_in_task(stops()), start_in_task(exits())
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

    task = start_in_task(work())  # type: ignore[arg-type]  # (its value is not the Task's)
    assert values == [7]
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
        task = start_in_task(work())
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

    task = start_in_task(work())
    assert started.is_set()
    await asyncio.sleep(0)  # the Task takes over the wait
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == ["finally"]


async def test_the_coroutine_runs_in_a_copy_of_the_callers_context() -> None:
    async def work() -> None:
        assert VAR.get() == "caller"
        VAR.set("task")
        await asyncio.sleep(0)
        assert VAR.get() == "task"

    await start_in_task(work())
    assert VAR.get() == "caller"
