"""Held pulls share one timer that sleeps on the broker's clock (``LongPolling``): with a ``FakeClock``
each held pull is answered (PULL_NOT_FOUND) once the clock passes its own suspend timeout, whatever the
order they came in, and not before; a pull woken by a message is answered once, its deadline passing
later answers nothing more."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rocketq.broker.server import Broker
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.remoting import RemotingClient
from rocketq.testing import FakeClock, eventually
from rocketq.testing.cluster import wait_dispatched

from .conftest import broker_config
from .raw import records, request, send_request

TOPIC = "DeadlineTopic"
HANG_S = 10.0  # a bound on a hang, not a timing


def pull(offset: int, suspend_ms: int) -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group="CG",
        topic=TOPIC,
        queue_id=0,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=4 | 2,
        commit_offset=0,
        suspend_timeout_millis=suspend_ms,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
    )
    return request(RequestCode.PULL_MESSAGE, header.to_ext_fields())


async def test_held_pulls_expire_at_their_own_deadlines_on_the_brokers_clock(tmp_path: Path) -> None:
    clock = FakeClock()
    async with Broker(broker_config(tmp_path), clock=clock) as broker:
        client = RemotingClient()
        try:
            await client.invoke(broker.address, send_request(TOPIC, b"zero"), 3)
            await wait_dispatched(broker)
            assert broker.context is not None
            holds = broker.context.long_polling
            # the later ones end first: the one timer is moved earlier for each
            suspends_s = [30, 10, 20]
            waiting = []
            for suspend_s in suspends_s:
                waiting.append(asyncio.create_task(client.invoke(broker.address, pull(1, suspend_s * 1000), 60)))
                await eventually(lambda: holds.held_count == len(waiting))
            start = clock.time()
            for step, (index, suspend_s) in enumerate(sorted(enumerate(suspends_s), key=lambda pair: pair[1])):
                clock.advance(start + suspend_s - 0.5 - clock.time())  # half a second short of its deadline
                await asyncio.sleep(0.05)
                assert holds.held_count == len(suspends_s) - step and not waiting[index].done()
                clock.advance(1.0)  # past it
                answer = await asyncio.wait_for(waiting[index], HANG_S)
                assert answer.code == ResponseCode.PULL_NOT_FOUND
                assert answer.ext_fields["nextBeginOffset"] == "1"
                assert holds.held_count == len(suspends_s) - step - 1
                assert [task.done() for task in waiting] == [
                    suspends_s[other] <= suspend_s for other in range(len(suspends_s))
                ]
            assert broker.context.pull_counters.missed == len(suspends_s)
        finally:
            await client.aclose()


async def test_a_woken_pull_is_answered_once(tmp_path: Path) -> None:
    clock = FakeClock()
    async with Broker(broker_config(tmp_path), clock=clock) as broker:
        client = RemotingClient()
        try:
            await client.invoke(broker.address, send_request(TOPIC, b"zero"), 3)
            await wait_dispatched(broker)
            assert broker.context is not None
            holds, counters = broker.context.long_polling, broker.context.pull_counters
            woken = asyncio.create_task(client.invoke(broker.address, pull(1, 10_000), 60))
            await eventually(lambda: holds.held_count == 1)
            await client.invoke(broker.address, send_request(TOPIC, b"one"), 3)
            answer = await asyncio.wait_for(woken, HANG_S)
            assert answer.code == ResponseCode.SUCCESS and [r.body for r in records(answer)] == [b"one"]
            assert holds.held_count == 0 and (counters.found, counters.missed) == (1, 0)

            # held after the woken one's deadline: the timer first wakes for the woken one's place
            later = asyncio.create_task(client.invoke(broker.address, pull(2, 15_000), 60))
            await eventually(lambda: holds.held_count == 1)
            clock.advance(11.0)  # past the woken pull's deadline: nothing to answer
            await asyncio.sleep(0.05)
            assert not later.done() and holds.held_count == 1
            clock.advance(5.0)  # past the later one's
            expired = await asyncio.wait_for(later, HANG_S)
            assert expired.code == ResponseCode.PULL_NOT_FOUND
            assert holds.held_count == 0
            assert (counters.found, counters.missed) == (1, 1)  # the woken pull was not answered again
        finally:
            await client.aclose()


async def test_many_woken_pulls_leave_no_deadlines_behind(tmp_path: Path) -> None:
    """Pulls woken long before their deadlines: the heap of deadlines is compacted, and the one held
    at the end still expires at its own."""
    clock = FakeClock()
    async with Broker(broker_config(tmp_path), clock=clock) as broker:
        client = RemotingClient()
        try:
            await client.invoke(broker.address, send_request(TOPIC, b"zero"), 3)
            await wait_dispatched(broker)
            assert broker.context is not None
            holds = broker.context.long_polling
            rounds = 300
            for offset in range(1, rounds + 1):
                held = asyncio.create_task(client.invoke(broker.address, pull(offset, 60_000), 60))
                await eventually(lambda: holds.held_count == 1)
                await client.invoke(broker.address, send_request(TOPIC, b"m%d" % offset), 3)
                answer = await asyncio.wait_for(held, HANG_S)
                assert [r.queue_offset for r in records(answer)] == [offset]
            last = asyncio.create_task(client.invoke(broker.address, pull(rounds + 1, 5_000), 60))
            await eventually(lambda: holds.held_count == 1)
            clock.advance(6.0)
            expired = await asyncio.wait_for(last, HANG_S)
            assert expired.code == ResponseCode.PULL_NOT_FOUND
            assert broker.context.pull_counters.found == rounds
        finally:
            await client.aclose()
