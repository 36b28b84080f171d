"""ListenerCalls: which running listener calls are overdue, each reported once."""

from __future__ import annotations

from rocketq.client.listener import CallTimes, ConsumeStatus, Reconsume
from rocketq.client.listener_calls import ListenerCalls, ListenerRun
from rocketq.client.message import MessageExt, MessageQueue
from rocketq.client.process_queue import ProcessQueue


def test_an_overdue_call_is_reported_once_and_the_next_call_of_its_run_anew() -> None:
    calls = ListenerCalls()
    process = ProcessQueue(MessageQueue("T", "b", 0), 0)
    slot = calls.open(process)
    first: list[MessageExt] = []
    second: list[MessageExt] = []
    assert calls.overdue(5, now=100) == []  # nothing running yet
    slot.current = first
    assert calls.overdue(5, now=101) == []  # first seen: timed from here
    assert calls.overdue(5, now=105.9) == []
    assert calls.overdue(5, now=106) == [(process, first)]
    assert calls.overdue(5, now=200) == []  # the same call: given up already
    slot.current = second
    assert calls.overdue(5, now=201) == []  # the run's next call: timed anew
    assert calls.overdue(5, now=205) == []
    assert calls.overdue(5, now=206) == [(process, second)]
    calls.close(slot)
    slot.current = first
    assert calls.overdue(5, now=300) == [] and calls.overdue(5, now=400) == []  # a closed run is not watched


def test_a_call_is_never_given_up_before_its_timeout() -> None:
    """However the checks fall, a call is given up only once it has run the whole timeout (and at most
    one check interval more)."""
    calls = ListenerCalls()
    slot = calls.open(ProcessQueue(MessageQueue("T", "b", 0), 0))
    for started in (0.1, 0.9, 1.0, 1.4):
        batch: list[MessageExt] = []
        checks = [t / 4 for t in range(0, 40)]  # every 0.25 s
        given_up_at = None
        for now in checks:
            if now >= started:
                slot.current = batch
            if calls.overdue(1.0, now=now):
                given_up_at = now
                break
        assert given_up_at is not None and started + 1.0 <= given_up_at <= started + 1.25


def test_a_rearmed_slot_is_reported_once_then_forgotten() -> None:
    calls = ListenerCalls()
    process = ProcessQueue(MessageQueue("T", "b", 0), 0)
    calls.rearm(process, [])
    assert calls.overdue(5, now=10) == []
    assert len(calls.overdue(5, now=15)) == 1
    assert calls.watched == 0


def _message(offset: int) -> MessageExt:
    return MessageExt("T", b"x", 0, offset, 0, 0, 0, 0, b"", 0)


def test_a_listener_run_collects_failed_batches_with_their_levels_and_is_watched_until_closed() -> None:
    calls, times = ListenerCalls(), CallTimes()
    process = ProcessQueue(MessageQueue("T", "b", 0), 0)
    run = ListenerRun(calls, times, process)
    first, second, third = [_message(0)], [_message(1)], [_message(2)]
    assert run.starting(first)
    run.returned(first, ConsumeStatus.CONSUME_SUCCESS)
    assert run.starting(second)
    run.returned(second, Reconsume(delay_level=5))
    assert calls.overdue(1, now=10) == [] and calls.overdue(1, now=11) == [(process, second)]  # watched
    assert run.starting(third)
    try:
        raise RuntimeError("listener bug")
    except RuntimeError:
        run.returned(third, run.raised(third))
    run.close()
    assert run.failed == [(second, 5), (third, 0)]  # a raised call fails with the default level
    assert times.mean_s is not None  # three calls timed
    assert calls.overdue(1, now=100) == []  # closed: no longer watched


def test_a_listener_run_stops_before_the_next_call_once_its_queue_is_dropped() -> None:
    calls, times = ListenerCalls(), CallTimes()
    process = ProcessQueue(MessageQueue("T", "b", 0), 0)
    run = ListenerRun(calls, times, process)
    assert run.starting([_message(0)])
    process.dropped = True
    assert not run.starting([_message(1)])
    run.close()
    assert calls.overdue(1, now=1) == []
