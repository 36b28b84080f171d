"""Brokers SIGKILLed with transactions in flight: pending half messages are still checked back after the
restart and committed once; a grouped commit the kill cut short is finished by the restarted broker.

The broker runs in a child process for the kill, then restarts in this process on the same store, with
a fake clock driving its check rounds."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from rocketq.client import Message, MessageQueue, Producer, TransactionProducer, TransactionState
from rocketq.client.admin import AdminClient
from rocketq.common.message_id import parse_offset_message_id
from rocketq.testing import FakeClock, LocalCluster, eventually
from rocketq.testing.cluster_process import ClusterProcess

from .transaction_helpers import bodies, end_again, visible

TOPIC = "Ledger"
GROUP = "LedgerWriters"


def pending(cluster: LocalCluster) -> int:
    transactions = cluster.brokers[0].transactions
    assert transactions is not None
    return sum(row["messages"] for row in transactions.pending_summary().values())


async def test_pending_half_messages_are_checked_after_a_kill(tmp_path: Path) -> None:
    decided = {b"committed": TransactionState.COMMIT, b"ask: yes": TransactionState.UNKNOWN}
    decided[b"ask: no"] = TransactionState.UNKNOWN
    child = ClusterProcess(tmp_path).start()
    try:
        async with TransactionProducer(
            local_transaction=lambda m, a: decided[m.body], check=lambda m: TransactionState.UNKNOWN, group=GROUP,
            namesrv_addr=child.namesrv_addr,
        ) as producer:  # fmt: skip
            results = {body: await producer.send_message_in_transaction(Message(TOPIC, body)) for body in decided}
        for _ in range(100):  # END_TRANSACTION is oneway: wait until the commit is visible
            if bodies(await visible(child, TOPIC)) == [b"committed"]:
                break
            await asyncio.sleep(0.05)
        assert bodies(await visible(child, TOPIC)) == [b"committed"]
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.stop()

    clock = FakeClock()
    async with LocalCluster(tmp_path, clock=clock) as cluster:  # the same store, recovered after the kill
        assert pending(cluster) == 2
        address = cluster.brokers[0].address
        assert (await end_again(address, GROUP, results[b"committed"], 8)).code == 0  # settled before the kill
        async with TransactionProducer(
            local_transaction=lambda m, a: TransactionState.UNKNOWN,
            check=lambda m: TransactionState.COMMIT if m.body == b"ask: yes" else TransactionState.ROLLBACK,
            group=GROUP,
            namesrv_addr=cluster.namesrv_addr,
        ):
            clock.advance(60)
            checks = cluster.brokers[0].transaction_checks
            assert checks is not None
            await checks.wait_rounds(1)
            await eventually(lambda: pending(cluster) == 0)
        await cluster.wait_dispatched()
        assert bodies(await visible(cluster, TOPIC)) == [b"ask: yes", b"committed"]


@pytest.mark.parametrize("kept", [0, 60, 150, 199])  # in the first batch, in the second one, all but the last
async def test_a_grouped_commit_cut_short_by_a_kill_is_finished_after_the_restart(tmp_path: Path, kept: int) -> None:
    child = ClusterProcess(tmp_path).start()
    try:
        async with AdminClient(child.namesrv_addr) as admin:
            await admin.update_topic(TOPIC, cluster="DefaultCluster", read_queues=2, write_queues=2)
        async with Producer(group=GROUP, namesrv_addr=child.namesrv_addr) as producer:
            group = producer.transaction_group("query-1:7")
            for part, queue_id in (("0-0", 0), ("1-0", 1)):
                messages = [Message(TOPIC, f"{part}/{i}".encode()) for i in range(100)]
                await group.send_batch(messages, MessageQueue(TOPIC, "broker-a", queue_id), part)
            outcome = await group.commit("broker-a", {"0-0": 100, "1-0": 100})
        assert outcome.committed == 200
        made = await visible(child, TOPIC, at_least=200)
        assert len(made) == 200
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.stop()
    # What a kill in the middle of the commit's put leaves: the op and only the first ``kept`` of its
    # messages (a crash keeps a prefix of the CommitLog; the rest of the put never reached the file).
    offsets = sorted(parse_offset_message_id(message.offset_msg_id)[2] for message in made)
    cut_at = offsets[kept]
    files = sorted((tmp_path / "broker-0" / "commitlog").iterdir())
    for path in files:
        start = int(path.name)
        if start + path.stat().st_size <= cut_at:
            continue
        with path.open("r+b") as file:
            position = max(0, cut_at - start)
            file.seek(position)
            file.write(bytes(path.stat().st_size - position))

    async with LocalCluster(tmp_path, clock=FakeClock()) as cluster:
        await cluster.wait_dispatched()
        after = await visible(cluster, TOPIC, at_least=200)
        assert bodies(after) == bodies(made)  # every message once: the first ones kept, the others stored again
        assert pending(cluster) == 0
        async with Producer(group=GROUP, namesrv_addr=cluster.namesrv_addr) as producer:
            again = await producer.transaction_group("query-1:7").commit("broker-a", {"0-0": 100, "1-0": 100})
        assert again.already_committed and again.committed == 0
