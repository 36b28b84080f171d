"""ConsumeThreads: the pool grows under load to its maximum, shrinks back to its minimum, runs work in
submission order, survives work that raises, drops queued work when closed, and hands ``call`` results
back to the event loop."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest

from rocketq.client.config import ConsumerConfig
from rocketq.client.consume_threads import ConsumeThreads
from rocketq.testing import wait_until


@pytest.mark.parametrize(("low", "high"), [(0, 1), (2, 1), (1, 0)])
def test_limits_are_checked(low: int, high: int) -> None:
    with pytest.raises(ValueError, match="consume threads"):
        ConsumeThreads(low, high, name="t")


def test_consumer_config_refuses_a_minimum_above_the_maximum() -> None:
    with pytest.raises(
        ValueError, match=r"consume_thread_min \(20\) must be at least 1 and at most consume_thread_max \(3\)"
    ):
        ConsumerConfig(group="g", consume_thread_max=3)
    assert ConsumerConfig(group="g", consume_thread_min=1, consume_thread_max=3).consume_thread_max == 3


def test_grows_to_max_under_load_then_shrinks_to_min() -> None:
    pool = ConsumeThreads(2, 5, name="t-grow", keep_alive_s=0.2)
    release = threading.Event()
    running = 0
    most = 0
    lock = threading.Lock()

    def blocked() -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        release.wait()
        with lock:
            running -= 1

    for _ in range(8):
        pool.submit(blocked)
    wait_until(lambda: running == 5)
    assert pool.threads == 5  # three of the eight wait for a thread
    release.set()
    wait_until(lambda: running == 0)
    assert most == 5
    wait_until(lambda: pool.threads == 2)  # the three above the minimum retire after their keep-alive
    time.sleep(0.5)  # time to (wrongly) retire more: a slow machine retires fewer, never a false failure
    assert pool.threads == 2  # and the minimum stays
    pool.close()
    wait_until(lambda: pool.threads == 0)


def test_an_idle_thread_is_reused_not_a_new_one_started() -> None:
    pool = ConsumeThreads(1, 4, name="t-reuse")
    done = threading.Semaphore(0)
    names: set[str] = set()

    def note_thread() -> None:
        names.add(threading.current_thread().name)
        done.release()

    for _ in range(20):  # one at a time: a single thread serves them all
        pool.submit(note_thread)
        assert done.acquire(timeout=5)
        wait_until(lambda: pool.idle == 1)  # back to waiting
    assert pool.threads == 1
    assert names == {"t-reuse-1"}
    pool.close()


def test_one_thread_runs_work_in_submission_order_and_survives_errors(caplog: pytest.LogCaptureFixture) -> None:
    pool = ConsumeThreads(1, 1, name="t-order")
    seen: list[int] = []

    def fails() -> None:
        raise ZeroDivisionError("listener bug")

    def note(number: int) -> Callable[[], None]:
        return lambda: seen.append(number)

    for number in range(50):
        pool.submit(fails if number == 10 else note(number))
    wait_until(lambda: len(seen) == 49)
    assert seen == [n for n in range(50) if n != 10]
    assert "consume work raised" in caplog.text
    pool.close()


def test_close_drops_queued_work_and_refuses_more() -> None:
    pool = ConsumeThreads(1, 1, name="t-close")
    started = threading.Event()
    release = threading.Event()
    ran: list[int] = []

    def first() -> None:
        started.set()
        release.wait()
        ran.append(1)

    pool.submit(first)
    assert started.wait(5)
    pool.submit(lambda: ran.append(2))
    pool.close()
    release.set()
    wait_until(lambda: pool.threads == 0)
    assert ran == [1]  # the running work finished, the queued one was dropped
    with pytest.raises(RuntimeError, match="closed"):
        pool.submit(lambda: None)


async def test_call_hands_results_and_errors_back_to_the_loop_and_is_cancelled_once_closed() -> None:
    pool = ConsumeThreads(1, 4, name="t-call")
    loop_thread = threading.get_ident()
    ran_on: list[int] = []

    def work(value: int) -> int:
        ran_on.append(threading.get_ident())
        if value < 0:
            raise ValueError(f"bad {value}")
        return value * 2

    futures = [pool.call(lambda value=value: work(value)) for value in (1, 2, -3, 4)]
    results = await asyncio.gather(*futures, return_exceptions=True)
    assert results[:2] == [2, 4] and results[3] == 8
    assert isinstance(results[2], ValueError) and str(results[2]) == "bad -3"
    assert loop_thread not in ran_on and len(ran_on) == 4
    pool.close()
    late = pool.call(lambda: work(5))
    assert late.cancelled()
