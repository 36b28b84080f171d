"""Transactional messages end to end: a half message, the local transaction, END_TRANSACTION, and the
broker's check-back driven by a fake clock (one check round per advance of the check interval)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.client import (
    Message,
    MessageExt,
    SyncTransactionProducer,
    TransactionProducer,
    TransactionState,
)
from rocketq.client.admin import AdminClient
from rocketq.common.message import CHECK_MAX_TOPIC
from rocketq.protocol import ResponseCode
from rocketq.remoting import Connection
from rocketq.testing import FakeClock, LocalCluster, ThreadedCluster, eventually

from .transaction_helpers import bodies, end_again, visible

TOPIC = "Payments"
GROUP = "PaymentProducers"
CHECK_INTERVAL_S = 60.0  # the broker's default transactionCheckInterval


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def cluster(tmp_path: Path, clock: FakeClock) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(tmp_path, clock=clock) as running:
        yield running


async def check_round(cluster: LocalCluster, clock: FakeClock, rounds: int) -> None:
    """Advance the clock by one check interval and wait for the broker's ``rounds``-th round."""
    clock.advance(CHECK_INTERVAL_S)
    checks = cluster.brokers[0].transaction_checks
    assert checks is not None
    await asyncio.wait_for(checks.wait_rounds(rounds), 10)


def pending(cluster: LocalCluster) -> int:
    transactions = cluster.brokers[0].transactions
    assert transactions is not None
    return sum(row["messages"] for row in transactions.pending_summary().values())


def producer_connections(cluster: LocalCluster) -> int:
    """How many open connections of producers of GROUP the first broker knows."""
    channels = cluster.brokers[0].clients.producers.get(GROUP, {}).values()
    return sum(1 for channel in channels if isinstance(channel.channel, Connection) and channel.channel.is_open)


def never_checked(message: MessageExt) -> TransactionState:
    raise AssertionError(f"{message.body!r} was checked back")


async def test_a_commit_is_visible_exactly_once(cluster: LocalCluster, clock: FakeClock) -> None:
    async def commit(message: Message, arg: object) -> TransactionState:  # a coroutine, awaited on the loop
        assert arg == "order-7"
        return TransactionState.COMMIT

    async with TransactionProducer(
        local_transaction=commit, check=never_checked, group=GROUP, namesrv_addr=cluster.namesrv_addr
    ) as producer:
        results = [
            await producer.send_message_in_transaction(Message(TOPIC, f"pay-{i}".encode(), keys=f"k{i}"), "order-7")
            for i in range(10)
        ]
    assert {result.local_state for result in results} == {TransactionState.COMMIT}
    address = cluster.brokers[0].address
    for result in results[:3]:  # a retried END_TRANSACTION, a late check answer, even a rollback: nothing
        assert (await end_again(address, GROUP, result, 8)).code == ResponseCode.SUCCESS
        assert (await end_again(address, GROUP, result, 8, from_check=True)).code == ResponseCode.SUCCESS
        assert (await end_again(address, GROUP, result, 12)).code == ResponseCode.SUCCESS
    await cluster.wait_dispatched()
    seen = await visible(cluster, TOPIC)
    assert bodies(seen) == sorted(f"pay-{i}".encode() for i in range(10))
    assert {m.properties.get("TRAN_MSG") for m in seen} == {None} and seen[0].keys == [
        seen[0].body.decode().replace("pay-", "k")
    ]
    assert {m.msg_id for m in seen} == {r.msg_id for r in results}  # the client's ids survive the commit
    await check_round(cluster, clock, 1)  # nothing left to check
    assert pending(cluster) == 0

    await cluster.brokers[0].aclose()  # settled stays settled across a restart
    await cluster.start_broker(0)
    assert (await end_again(cluster.brokers[0].address, GROUP, results[0], 8)).code == ResponseCode.SUCCESS
    await cluster.wait_dispatched()
    assert bodies(await visible(cluster, TOPIC)) == bodies(seen)


async def test_a_rollback_is_never_visible(cluster: LocalCluster, clock: FakeClock) -> None:
    def local(message: Message, arg: object) -> TransactionState:  # a plain function, run in a thread
        if message.body == b"fails":
            raise RuntimeError("the local transaction failed")  # counts as UNKNOWN
        return TransactionState.ROLLBACK

    async with TransactionProducer(
        local_transaction=local,
        check=lambda m: TransactionState.ROLLBACK,
        group=GROUP,
        namesrv_addr=cluster.namesrv_addr,
    ) as producer:
        rolled = await producer.send_message_in_transaction(Message(TOPIC, b"cancelled"))
        failed = await producer.send_message_in_transaction(Message(TOPIC, b"fails"))
        assert (rolled.local_state, failed.local_state) == (TransactionState.ROLLBACK, TransactionState.UNKNOWN)
        assert pending(cluster) == 1
        await check_round(cluster, clock, 1)
        await eventually(lambda: pending(cluster) == 0)
    assert (await end_again(cluster.brokers[0].address, GROUP, rolled, 8)).code == ResponseCode.SUCCESS  # too late
    await cluster.wait_dispatched()
    assert await visible(cluster, TOPIC) == []


async def test_unknown_transactions_are_resolved_by_check_back(cluster: LocalCluster, clock: FakeClock) -> None:
    asked: Counter[bytes] = Counter()

    def check(message: MessageExt) -> TransactionState:
        asked[message.body] += 1
        assert message.topic == TOPIC and message.properties["TRANSACTION_CHECK_TIMES"] == "1"
        return TransactionState.COMMIT if message.body == b"yes" else TransactionState.ROLLBACK

    async with TransactionProducer(
        local_transaction=lambda m, a: TransactionState.UNKNOWN, check=check, group=GROUP,
        namesrv_addr=cluster.namesrv_addr,
    ) as producer:  # fmt: skip
        for body in (b"yes", b"no"):
            await producer.send_message_in_transaction(Message(TOPIC, body))
        checks = cluster.brokers[0].transaction_checks
        assert checks is not None
        clock.advance(5)
        await checks.check_round()  # a round now: both are younger than transactionTimeOut (6 s)
        assert checks.checks_sent == 0
        await check_round(cluster, clock, 2)
        assert checks.checks_sent == 2
        await eventually(lambda: pending(cluster) == 0)
    assert asked == Counter({b"yes": 1, b"no": 1})
    await cluster.wait_dispatched()
    assert bodies(await visible(cluster, TOPIC)) == [b"yes"]


async def test_fifteen_unanswered_checks_end_in_a_rollback(cluster: LocalCluster, clock: FakeClock) -> None:
    asked: list[str] = []

    def check(message: MessageExt) -> TransactionState:
        asked.append(message.properties["TRANSACTION_CHECK_TIMES"])
        return TransactionState.UNKNOWN

    async with TransactionProducer(
        local_transaction=lambda m, a: TransactionState.UNKNOWN, check=check, group=GROUP,
        namesrv_addr=cluster.namesrv_addr,
    ) as producer:  # fmt: skip
        await producer.send_message_in_transaction(Message(TOPIC, b"undecided"))
        for round_number in range(1, 16):
            await check_round(cluster, clock, round_number)
            await eventually(lambda n=round_number: len(asked) == n)
        assert pending(cluster) == 1
        await check_round(cluster, clock, 16)  # out of checks: rolled back, kept aside for operators
        assert pending(cluster) == 0 and len(asked) == 15
    assert asked == [str(n) for n in range(1, 16)]
    await cluster.wait_dispatched()
    assert await visible(cluster, TOPIC) == []
    kept = await visible(cluster, CHECK_MAX_TOPIC)
    assert bodies(kept) == [b"undecided"] and kept[0].properties["REAL_TOPIC"] == TOPIC


CHILD = Path(__file__).with_name("transaction_child.py")


async def test_a_killed_producer_is_resolved_by_another_of_its_group(cluster: LocalCluster, clock: FakeClock) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen(
        [sys.executable, str(CHILD), cluster.namesrv_addr, TOPIC, GROUP], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(child.stdout.readline), 30)
        assert line.strip() == "in the local transaction"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    assert pending(cluster) == 1
    # the broker checks with an open connection of the group: the dead producer's once it has seen it
    # close, the live one's once it has registered; then one round is enough
    await eventually(lambda: producer_connections(cluster) == 0, what="the killed producer's connection closed")
    async with TransactionProducer(
        local_transaction=lambda m, a: TransactionState.UNKNOWN, check=lambda m: TransactionState.COMMIT, group=GROUP,
        namesrv_addr=cluster.namesrv_addr,
    ):  # fmt: skip
        await eventually(lambda: producer_connections(cluster) == 1, what="the live producer registered")
        await check_round(cluster, clock, 1)
        await eventually(lambda: pending(cluster) == 0, what="the live producer's answer to the check")
    await cluster.wait_dispatched()
    assert bodies(await visible(cluster, TOPIC)) == [b"from a producer that died"]


def test_the_blocking_producer(tmp_path: Path) -> None:
    with ThreadedCluster(tmp_path) as cluster:
        with SyncTransactionProducer(
            local_transaction=lambda m, a: TransactionState.COMMIT if a else TransactionState.ROLLBACK,
            check=never_checked,
            group=GROUP,
            namesrv_addr=cluster.namesrv_addr,
        ) as producer:
            kept = producer.send_message_in_transaction(Message(TOPIC, b"kept"), True)
            dropped = producer.send_message_in_transaction(Message(TOPIC, b"dropped"), False)
        assert (kept.local_state, dropped.local_state) == (TransactionState.COMMIT, TransactionState.ROLLBACK)
        cluster.call(cluster.cluster.wait_dispatched())
        assert bodies(cluster.call(visible(cluster, TOPIC))) == [b"kept"]


async def test_transactional_messages_cannot_be_delayed(cluster: LocalCluster) -> None:
    async with TransactionProducer(
        local_transaction=lambda m, a: TransactionState.COMMIT, check=never_checked, group=GROUP,
        namesrv_addr=cluster.namesrv_addr,
    ) as producer:  # fmt: skip
        with pytest.raises(Exception, match="cannot be delayed"):
            await producer.send_message_in_transaction(Message(TOPIC, b"x", delay_level=2))
    async with AdminClient(cluster.namesrv_addr) as admin:
        assert TOPIC not in await admin.topic_list()  # nothing was sent


async def test_a_half_message_is_not_checked_before_its_immunity_time(cluster: LocalCluster, clock: FakeClock) -> None:
    async with TransactionProducer(
        local_transaction=lambda m, a: TransactionState.UNKNOWN, check=lambda m: TransactionState.COMMIT,
        group=GROUP, namesrv_addr=cluster.namesrv_addr,
    ) as producer:  # fmt: skip
        message = Message(TOPIC, b"patient", properties={"CHECK_IMMUNITY_TIME_IN_SECONDS": "100"})
        await producer.send_message_in_transaction(message)
        checks = cluster.brokers[0].transaction_checks
        assert checks is not None
        await check_round(cluster, clock, 1)  # 60 s old: past transactionTimeOut, not past its immunity
        assert checks.checks_sent == 0
        await check_round(cluster, clock, 2)
        assert checks.checks_sent == 1
        await eventually(lambda: pending(cluster) == 0)
    await cluster.wait_dispatched()
    assert bodies(await visible(cluster, TOPIC)) == [b"patient"]
