"""ListenerSlots: at most ``limit`` holders, waiters served in order, a cancelled waiter takes no slot
(and passes on one handed to it), as an ``asyncio.Semaphore`` behaves."""

from __future__ import annotations

import asyncio

import pytest

from rocketq.client.listener_slots import ListenerSlots


async def test_free_slots_are_taken_at_once_then_callers_wait_in_order() -> None:
    slots = ListenerSlots(2)
    assert slots.take_now() and slots.take_now()
    assert not slots.take_now() and slots.free == 0
    order: list[int] = []

    async def waiter(number: int) -> None:
        await slots.take()
        order.append(number)

    first = asyncio.create_task(waiter(1))
    second = asyncio.create_task(waiter(2))
    await asyncio.sleep(0)
    assert order == []
    slots.release()
    await first
    assert order == [1] and not second.done()
    slots.release()
    await second
    assert order == [1, 2] and slots.free == 0
    slots.release()
    slots.release()
    assert slots.free == 2


async def one_slot_taken_and_waiters(count: int) -> tuple[ListenerSlots, list[asyncio.Task[None]]]:
    """A single slot, taken, and ``count`` callers waiting for it, in that order."""
    slots = ListenerSlots(1)
    assert slots.take_now()
    waiters = [asyncio.create_task(slots.take()) for _ in range(count)]
    await asyncio.sleep(0)  # each waits now
    assert not any(waiter.done() for waiter in waiters)
    return slots, waiters


async def test_a_free_slot_is_not_taken_ahead_of_a_waiter() -> None:
    slots, (waiting,) = await one_slot_taken_and_waiters(1)
    slots.release()  # handed to the waiter, not made free
    assert not slots.take_now()
    await waiting
    assert slots.free == 0


async def test_a_cancelled_waiter_takes_no_slot() -> None:
    slots, (waiting,) = await one_slot_taken_and_waiters(1)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    slots.release()
    assert slots.free == 1


async def test_a_slot_handed_to_a_cancelled_waiter_goes_to_the_next() -> None:
    slots, (first, second) = await one_slot_taken_and_waiters(2)
    slots.release()  # handed to the first, which is cancelled before it resumes
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    await second
    assert slots.free == 0
    slots.release()
    assert slots.free == 1
