"""ListenerCalls: which running listener calls are overdue, each reported once."""

from __future__ import annotations

import time

from rocketq.client.listener_calls import CallSlot, ListenerCalls
from rocketq.client.message import MessageExt, MessageQueue
from rocketq.client.process_queue import ProcessQueue


def test_an_overdue_call_is_reported_once_and_the_next_call_of_its_run_anew() -> None:
    calls = ListenerCalls()
    process = ProcessQueue(MessageQueue("T", "b", 0), 0)
    slot = calls.open(process)
    first: list[MessageExt] = []
    second: list[MessageExt] = []
    slot.current = (first, time.monotonic() - 10)
    assert calls.overdue(5) == [(process, first)]
    assert calls.overdue(5) == []  # the same call: given up already
    slot.current = (second, time.monotonic())
    assert calls.overdue(5) == []  # the run's next call has just started
    slot.current = (second, time.monotonic() - 10)
    assert calls.overdue(5) == [(process, second)]
    calls.close(slot)
    slot.current = (first, time.monotonic() - 100)
    assert calls.overdue(5) == []  # a closed run is not watched


def test_a_rearmed_slot_is_reported_once_then_forgotten() -> None:
    calls = ListenerCalls()
    process = ProcessQueue(MessageQueue("T", "b", 0), 0)
    rearmed = CallSlot(process, rearmed=True)
    rearmed.current = ([], time.monotonic() - 10)
    calls._slots.add(rearmed)
    assert len(calls.overdue(5)) == 1
    assert rearmed not in calls._slots
