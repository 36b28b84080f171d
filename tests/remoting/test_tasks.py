"""start_eagerly: a coroutine runs at once until it first waits, then in a Task that carries on."""

from __future__ import annotations

import asyncio
import contextvars
import logging

import pytest

from rocketq.remoting.tasks import cancel_and_wait, start_eagerly

seen: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="outer")


async def test_a_coroutine_that_never_waits_runs_before_start_eagerly_returns() -> None:
    ran: list[int] = []

    async def answer() -> None:
        ran.append(1)

    assert start_eagerly(answer()) is None
    assert ran == [1]


async def test_a_coroutine_that_waits_carries_on_in_a_task_with_its_result() -> None:
    gate: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    steps: list[str] = []

    async def two_halves() -> int:
        steps.append("before")
        value = await gate
        steps.append("after")
        await asyncio.sleep(0)  # a bare yield as well as a future
        return value * 2

    task = start_eagerly(two_halves(), name="halves")
    assert task is not None and task.get_name() == "halves"
    assert steps == ["before"]
    gate.set_result(21)
    assert await task == 42
    assert steps == ["before", "after"]


async def test_errors_after_the_first_wait_reach_the_task() -> None:
    async def fails_later() -> None:
        await asyncio.sleep(0)
        raise ValueError("late")

    task = start_eagerly(fails_later())
    assert task is not None
    with pytest.raises(ValueError, match="late"):
        await task


async def test_an_error_before_the_first_wait_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    async def fails_at_once() -> None:
        raise ValueError("early")

    with caplog.at_level(logging.ERROR, logger="rocketq.remoting.tasks"):
        assert start_eagerly(fails_at_once(), name="early-one") is None
    assert "early-one failed" in caplog.text and "ValueError: early" in caplog.text


async def test_cancelling_the_task_cancels_the_coroutine_where_it_waits() -> None:
    cleaned: list[str] = []
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def waits_forever() -> None:
        try:
            await never
        except asyncio.CancelledError:
            cleaned.append("cancelled")
            raise

    task = start_eagerly(waits_forever())
    assert task is not None
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == ["cancelled"] and never.cancelled()


async def test_the_coroutine_runs_in_a_copy_of_the_context_before_and_after_its_wait() -> None:
    values: list[str] = []

    async def sets_and_reads() -> None:
        seen.set("inner")
        await asyncio.sleep(0)
        values.append(seen.get())

    task = start_eagerly(sets_and_reads())
    assert seen.get() == "outer"  # the caller's context is untouched
    assert task is not None
    await task
    assert values == ["inner"]  # the Task carried on in the context the first part ran in


async def test_cancel_and_wait_stops_a_caller_that_is_cancelled_while_it_waits() -> None:
    cleaning = asyncio.Event()

    async def slow_to_stop() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cleaning.set()
            await asyncio.Event().wait()  # cleanup that lasts until it is cancelled too
            raise

    carried_on: list[str] = []

    async def closer(worker: asyncio.Task[None]) -> None:
        await cancel_and_wait([worker])
        carried_on.append("after")

    worker = asyncio.create_task(slow_to_stop())
    await asyncio.sleep(0)
    closing = asyncio.create_task(closer(worker))
    async with asyncio.timeout(10):
        await cleaning.wait()  # the closer now waits for the worker's cleanup
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
    assert carried_on == [] and worker.cancelled()


async def test_cancel_and_wait_raises_task_errors_unless_told_not_to() -> None:
    async def fails_on_cancel() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            raise RuntimeError("cleanup failed") from None

    first = asyncio.create_task(fails_on_cancel())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="cleanup failed"):
        await cancel_and_wait([first])
    second = asyncio.create_task(fails_on_cancel())
    await asyncio.sleep(0)
    await cancel_and_wait([second, None], ignore_errors=True)
    assert second.done()
