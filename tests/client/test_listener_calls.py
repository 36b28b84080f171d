"""ListenerCalls: which running listener calls are overdue, each reported once."""

from __future__ import annotations

from rocketq.client.listener_calls import CallSlot, ListenerCalls
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
    rearmed = CallSlot(process, rearmed=True)
    rearmed.current = []
    calls._slots.add(rearmed)
    assert calls.overdue(5, now=10) == []
    assert len(calls.overdue(5, now=15)) == 1
    assert rearmed not in calls._slots
