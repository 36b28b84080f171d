"""Retries, dead letters and orderly consumption, end to end (fast delay levels for the tests)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import threading
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rocketq.admin.cli import admin
from rocketq.client import ClientConfig, ConsumeStatus, Message, Producer, PullConsumer, PushConsumer, Reconsume
from rocketq.client.admin import AdminClient
from rocketq.client.config import ConsumerConfig
from rocketq.client.message import MessageExt
from rocketq.common.group_topics import retry_topic
from rocketq.protocol import MessageQueue as WireQueue
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.client_bodies import LockBatchRequestBody, LockBatchResponseBody
from rocketq.remoting.clock import SYSTEM_CLOCK, Clock
from rocketq.testing import FakeClock, LocalCluster, eventually

from .broker_taps import tap
from .helpers import consumer_config, nudge_until, poll_until, schedule_pass

FAST_LEVELS = " ".join(f"{100 * (i + 1)}ms" for i in range(18))  # level n waits n x 100 ms


@contextlib.asynccontextmanager
async def jobs_cluster(root: Path, clock: Clock = SYSTEM_CLOCK) -> AsyncIterator[LocalCluster]:
    """Two brokers with the test's delay levels and the topic "Jobs" (4 queues on each)."""
    async with LocalCluster(root, brokers=2, message_delay_level=FAST_LEVELS, clock=clock) as running:
        async with AdminClient(running.namesrv_addr) as admin:
            await admin.update_topic("Jobs", cluster="DefaultCluster", read_queues=4, write_queues=4)
        yield running


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with jobs_cluster(tmp_path) as running:
        yield running


def retrying_config(cluster: LocalCluster, group: str, **overrides: Any) -> ConsumerConfig:
    """``consumer_config`` whose member asks for routes every second: the group's retry topic is created
    on each broker as the member's heartbeat reaches it, and the route the member read at its start may
    list only the brokers that had registered it by then."""
    client = ClientConfig(
        namesrv_addr=cluster.namesrv_addr, instance_name=f"c{time.monotonic_ns()}", poll_name_server_interval_s=1.0
    )
    return consumer_config(cluster, group, client=client, **overrides)


async def pulling_retries_everywhere(consumer: PushConsumer, cluster: LocalCluster) -> None:
    """Wait until ``consumer`` pulls its retry topic on every broker, where its failed messages come back."""
    brokers = {broker.config.broker_name for broker in cluster.brokers}
    await eventually(
        lambda: (
            {q.broker_name for q in consumer.assigned_queues if q.topic == retry_topic(consumer.config.group)}
            == brokers
        )
    )


async def test_failed_message_comes_back_with_growing_delay_then_dead_letters(tmp_path: Path) -> None:
    """The brokers run on a ``FakeClock`` moved on by the test: a retry's delay is measured on that
    clock (the send-back's store time, the schedule service's "now"), so a busy machine cannot make a
    gap look short or long."""
    clock = FakeClock()
    deliveries: list[tuple[float, int, str, str]] = []

    def listener(messages: list[MessageExt]) -> ConsumeStatus:
        for message in messages:
            deliveries.append((clock.time(), message.reconsume_times, message.topic, message.msg_id))
        return ConsumeStatus.RECONSUME_LATER if messages[0].body == b"poison" else ConsumeStatus.CONSUME_SUCCESS

    def poison() -> list[tuple[float, int, str, str]]:
        return [d for d in deliveries if d[3] == sent.msg_id]

    async with jobs_cluster(tmp_path, clock=clock) as cluster:
        consumer = PushConsumer(retrying_config(cluster, "RG", max_reconsume_times=3), listener)
        consumer.subscribe("Jobs")
        await consumer.start()
        await pulling_retries_everywhere(consumer, cluster)
        try:
            async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
                sent = await producer.send(Message("Jobs", b"poison", keys="bad-1"))
                await producer.send(Message("Jobs", b"fine"))
            await nudge_until(clock, lambda: len(poison()) >= 4, "four deliveries of the poison")
            dlq = PullConsumer(consumer_config(cluster, "DLQ_READER"))
            dlq.subscribe("%DLQ%RG")
            await dlq.start()
            try:
                dead: list[MessageExt] = []
                await poll_until(dlq, dead.extend, lambda: bool(dead), "the dead letter")  # (a bound on a hang only)
            finally:
                await dlq.aclose()
            # past the longest delay a (wrong) fifth delivery could have (level 3 + 4: 700 ms), by the
            # clock the schedule services read: they delivered the three retries and nothing more
            passed_from = clock.time()
            await nudge_until(clock, lambda: clock.time() >= passed_from + 0.8, "0.8 s of the brokers' clock")
            schedules = [broker.schedule for broker in cluster.brokers]
            for schedule in schedules:
                assert schedule is not None
                await schedule_pass(clock, schedule)  # (one whole pass after the clock moved past)
            assert sum(schedule.delivered for schedule in schedules if schedule is not None) == 3
        finally:
            await consumer.aclose()
    assert [d[1] for d in poison()] == [0, 1, 2, 3]  # seen max_reconsume_times + 1 times
    assert {d[2] for d in poison()} == {"Jobs"}  # retries show the original topic and id
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(poison())]
    # retry n waits at least delay level 3 + n on the brokers' clock: 300, 400, 500 ms with the test's
    # levels (less 1 ms: a store time is in whole milliseconds)
    assert all(gap >= (3 + n) * 0.1 - 0.0011 for n, gap in enumerate(gaps)), gaps
    assert [m.body for m in dead] == [b"poison"]
    assert dead[0].msg_id == sent.msg_id and dead[0].reconsume_times == 4


async def test_orderly_consumption_keeps_send_order_through_failures_and_rebalance(cluster: LocalCluster) -> None:
    """Per sharding key, every message exactly once and in send order, through a locally retried failure
    and a member joining mid-stream. Offsets are committed every 5 s (the default), so what keeps a
    taken-over queue from replaying is the old owner committing before it unlocks and the new one
    reading its start offset only once it holds the lock."""
    seen: dict[str, list[int]] = defaultdict(list)
    failed_once: dict[bytes, list[int]] = {}

    def listener(messages: list[MessageExt]) -> bool:
        (message,) = messages
        if message.body.endswith(b":7"):
            attempts = failed_once.setdefault(message.body, [])
            attempts.append(message.reconsume_times)
            if len(attempts) == 1:
                return False  # fail once: it must be retried before anything after it
        key, number = message.body.decode().split(":")
        seen[key].append(int(number))
        time.sleep(0.005)  # a listener doing I/O: a revoked queue's message in hand finishes after a while
        return True

    def config() -> ConsumerConfig:
        return consumer_config(cluster, "OG", suspend_current_queue_time_ms=100, persist_consumer_offset_interval_s=5.0)

    first = PushConsumer(config(), listener, orderly=True)
    first.subscribe("Jobs")
    await first.start()
    second = PushConsumer(config(), listener, orderly=True)
    keys = [f"order-{k}" for k in range(6)]
    try:
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            for number in range(20):
                for key in keys:
                    await producer.send_orderly(Message("Jobs", f"{key}:{number}".encode()), sharding_key=key)
                if number == 8:
                    second.subscribe("Jobs")
                    await second.start()  # rebalance in the middle of the stream
                    await asyncio.sleep(0.3)
        await eventually(lambda: all(len(set(seen[k])) == 20 for k in keys), timeout_s=30)
        assert first.assigned_queues and second.assigned_queues  # both members really took queues
    finally:
        await first.aclose()
        await second.aclose()
    for key in keys:
        assert seen[key] == list(range(20)), (key, seen[key])  # in order, and nothing consumed twice
    assert len(failed_once) == len(keys)
    # a local retry is seen as one; a failed message whose queue moved starts afresh on its new owner
    assert all(attempts in ([0, 1], [0, 0]) for attempts in failed_once.values()), failed_once
    assert [0, 1] in failed_once.values()


async def test_orderly_retries_locally_without_limit_by_default_or_dead_letters_at_a_set_limit(
    cluster: LocalCluster,
) -> None:
    """RocketMQ's rule: an orderly queue waits for its failing message (no limit unless one is set),
    and the listener sees the attempt count grow; with ``max_reconsume_times`` set, the message goes to
    the DLQ after that many retries and the queue moves on."""
    events: dict[str, list[tuple[bytes, int]]] = defaultdict(list)  # group -> (body, reconsume_times)

    def listener_of(group: str, failures: int) -> Callable[[list[MessageExt]], bool]:
        def listener(messages: list[MessageExt]) -> bool:
            (message,) = messages
            if not message.body.startswith(group.encode()):
                return True  # the other group's messages
            events[group].append((message.body, message.reconsume_times))
            stubborn = message.body.endswith(b"/stubborn")
            return not stubborn or len(events[group]) > failures + 1

        return listener

    unlimited = PushConsumer(
        consumer_config(cluster, "OU", suspend_current_queue_time_ms=10), listener_of("OU", 20), orderly=True
    )
    limited = PushConsumer(
        consumer_config(cluster, "OL", suspend_current_queue_time_ms=10, max_reconsume_times=2),
        listener_of("OL", 1_000),
        orderly=True,
    )
    for consumer in (unlimited, limited):
        consumer.subscribe("Jobs")
        await consumer.start()
    try:
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            for group in ("OU", "OL"):
                for body in (b"/first", b"/stubborn", b"/after"):
                    await producer.send_orderly(Message("Jobs", group.encode() + body), sharding_key=group)
        await eventually(lambda: all(events[g] and events[g][-1][0].endswith(b"/after") for g in ("OU", "OL")))
    finally:
        await unlimited.aclose()
        await limited.aclose()
    assert events["OU"] == [(b"OU/first", 0), *[(b"OU/stubborn", n) for n in range(21)], (b"OU/after", 0)]
    assert events["OL"] == [(b"OL/first", 0), *[(b"OL/stubborn", n) for n in range(3)], (b"OL/after", 0)]
    dead = sum(broker.store.get_max_offset_in_queue("%DLQ%OL", 0) for broker in cluster.brokers)
    assert dead == 1  # OL's stubborn message is a dead letter; OU never sent one
    assert sum(broker.store.get_max_offset_in_queue("%DLQ%OU", 0) for broker in cluster.brokers) == 0


async def test_after_sixteen_retries_the_message_is_a_dead_letter(tmp_path: Path) -> None:
    levels = " ".join(f"{10 * (i + 1)}ms" for i in range(18))  # 10 ms steps: 16 retries in a few seconds
    async with LocalCluster(tmp_path, brokers=1, message_delay_level=levels) as cluster:
        attempts: list[int] = []
        consumer = PushConsumer(
            consumer_config(cluster, "SIXTEEN"), lambda ms: attempts.extend(m.reconsume_times for m in ms) or False
        )
        consumer.subscribe("Doomed")
        await consumer.start()
        try:
            async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
                await producer.send(Message("Doomed", b"never works"))
            await eventually(lambda: len(attempts) >= 17, timeout_s=30)
            broker = cluster.brokers[0]
            # in the dead letter queue once the 17th attempt failed: nothing comes after that
            await eventually(lambda: broker.store.get_max_offset_in_queue("%DLQ%SIXTEEN", 0) == 1)
        finally:
            await consumer.aclose()
        assert attempts == list(range(17))  # the first delivery and 16 retries, then no more
        assert broker.store.get_max_offset_in_queue("%DLQ%SIXTEEN", 0) == 1


async def test_query_by_id_shows_a_message_and_its_retries(cluster: LocalCluster) -> None:
    """``rocketq admin queryMsgById`` finds the message, then its copies in the group's retry topic (and
    in the delay topic, where each retry waited), by the client id they keep."""
    attempts: list[int] = []

    def listener(messages: list[MessageExt]) -> bool:
        attempts.append(messages[0].reconsume_times)
        return len(attempts) > 2  # two failures, then it works

    consumer = PushConsumer(consumer_config(cluster, "QR"), listener)
    consumer.subscribe("Jobs")
    await consumer.start()
    try:
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            sent = await producer.send(Message("Jobs", b"flaky"))
        await eventually(lambda: attempts == [0, 1, 2])
    finally:
        await consumer.aclose()

    def query(*args: str) -> str:
        command = ["queryMsgById", "-n", cluster.namesrv_addr, "-i", *args]
        result = CliRunner().invoke(admin, command, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    rows: list[dict[str, Any]] = []
    deadline = time.monotonic() + 10
    while len(rows) < 5 and time.monotonic() < deadline:  # the index is built behind the stores
        rows = json.loads(await asyncio.to_thread(query, sent.msg_id, "-t", "Jobs", "--json"))
    assert [(row["topic"], row["reconsumeTimes"]) for row in rows] == [
        ("Jobs", 0),
        ("SCHEDULE_TOPIC_XXXX", 1),
        ("%RETRY%QR", 1),
        ("SCHEDULE_TOPIC_XXXX", 2),
        ("%RETRY%QR", 2),
    ]
    assert {row["msgId"] for row in rows} == {sent.msg_id}
    assert [row["realTopic"] for row in rows if row["topic"] == "SCHEDULE_TOPIC_XXXX"] == ["%RETRY%QR"] * 2
    assert {row["originMessageId"] for row in rows[1:]} == {sent.offset_msg_id}  # as a Java broker sets it
    by_offset_id = json.loads(await asyncio.to_thread(query, sent.offset_msg_id, "--json"))
    assert by_offset_id == rows  # no topic needed: the broker's id leads to the message, then to its copies
    alone = json.loads(await asyncio.to_thread(query, sent.offset_msg_id, "--no-retries", "--json"))
    assert alone == rows[:1]
    assert "SCHEDULE_TOPIC_XXXX (for %RETRY%QR)" in await asyncio.to_thread(query, sent.offset_msg_id)
    async with AdminClient(cluster.namesrv_addr) as admin_client:  # the group is gone, its offsets stay
        assert await admin_client.groups_consuming("Jobs") == ["QR"]


async def test_an_orderly_member_keeps_its_locks_by_renewing_them_and_hands_them_over(tmp_path: Path) -> None:
    """Broker locks live 1.5 s of the brokers' clock here, a FakeClock (so a stall of the loaded host ages
    no lock). The clock moves 0.5 s at a time, nine times (three lifetimes); after each move the member
    renews (every 0.2 s of its own time) and it holds all its queues throughout. A second member joining
    gets half of them: with the clock still no lock expires, so only the first unlocking what it gives up
    hands them over. The second gets all of them once the first leaves, and closing unlocks everything."""
    clock = FakeClock()
    async with LocalCluster(tmp_path, brokers=1, rebalance_lock_max_live_time_ms=1500, clock=clock) as cluster:
        async with AdminClient(cluster.namesrv_addr) as admin_client:
            await admin_client.update_topic("Jobs", cluster="DefaultCluster", read_queues=4, write_queues=4)
        broker = cluster.brokers[0]
        assert broker.context is not None
        locks = broker.context.locks
        queues = [WireQueue(topic="Jobs", broker_name=broker.config.broker_name, queue_id=q) for q in range(4)]
        answered: list[tuple[str, set[int]]] = []  # each LOCK_BATCH_MQ: who asked, the Jobs queues it holds after

        def lock_answered(request: RemotingCommand, answer: RemotingCommand | None) -> None:
            assert answer is not None and answer.code == ResponseCode.SUCCESS
            held = LockBatchResponseBody.decode(answer.body).lock_ok_mq_set  # (its retry topic's queue too)
            jobs = {queue.queue_id for queue in held if queue.topic == "Jobs"}
            answered.append((LockBatchRequestBody.decode(request.body).client_id, jobs))

        tap(broker, RequestCode.LOCK_BATCH_MQ, lock_answered)

        def held_by(member: PushConsumer) -> set[int]:
            now_ms = int(clock.time() * 1000)  # the broker's lock clock
            return {q.queue_id for q in queues if locks.holder("LR", q, now_ms) == member.client_id}

        def renewed_all(member: PushConsumer, since: int) -> bool:
            return (member.client_id, {0, 1, 2, 3}) in answered[since:]

        def orderly_member(name: str) -> PushConsumer:
            # an unlock that timed out would leave its locks to expire, which they never do here: requests
            # may take as long as a loaded host needs
            client = ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name=name, request_timeout_s=30.0)
            config = consumer_config(cluster, "LR", client=client, lock_renew_interval_s=0.2, rebalance_interval_s=60.0)
            member = PushConsumer(config, lambda messages: None, orderly=True)
            member.subscribe("Jobs")
            return member

        first = await orderly_member("first").start()
        second = orderly_member("second")
        try:
            await eventually(lambda: held_by(first) == {0, 1, 2, 3})
            for _ in range(9):  # 4.5 s of the lock clock: three lifetimes
                since = len(answered)
                clock.advance(0.5)
                assert held_by(first) == {0, 1, 2, 3}  # renewed at most 0.5 s ago
                await eventually(partial(renewed_all, first, since), what="all four locks renewed")
            await second.start()
            await eventually(lambda: len(held_by(first)) == len(held_by(second)) == 2)
            assert held_by(first) | held_by(second) == {0, 1, 2, 3}
        finally:
            await first.aclose()
        await eventually(lambda: held_by(second) == {0, 1, 2, 3})
        await second.aclose()
        assert held_by(second) == set()


async def test_a_listener_chooses_the_retry_delay_or_the_dead_letter_queue(tmp_path: Path) -> None:
    """Reconsume(delay_level=10) redelivers after level 10 (1 s here, not level 3's 0.3 s) of the
    brokers' clock, a FakeClock the test moves; Reconsume(delay_level=-1) sends the message straight to
    the DLQ, with no redelivery."""
    clock = FakeClock()
    deliveries: dict[bytes, list[float]] = defaultdict(list)

    def listener(messages: list[MessageExt]) -> ConsumeStatus | Reconsume:
        (message,) = messages
        deliveries[message.body].append(clock.time())
        if message.reconsume_times == 0:
            return Reconsume(delay_level=10) if message.body == b"later" else Reconsume(delay_level=-1)
        return ConsumeStatus.CONSUME_SUCCESS

    async with jobs_cluster(tmp_path, clock=clock) as cluster:

        def dead() -> int:
            return sum(broker.store.get_max_offset_in_queue("%DLQ%CHOOSE", 0) for broker in cluster.brokers)

        consumer = PushConsumer(retrying_config(cluster, "CHOOSE"), listener)
        consumer.subscribe("Jobs")
        await consumer.start()
        await pulling_retries_everywhere(consumer, cluster)
        try:
            async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
                await producer.send(Message("Jobs", b"later"))
                await producer.send(Message("Jobs", b"dead"))
            await nudge_until(clock, lambda: len(deliveries[b"later"]) == 2, "the redelivery")
            await eventually(lambda: dead() == 1)  # in the dead letter queue: it is not delivered again
        finally:
            await consumer.aclose()
        assert dead() == 1
    first, again = deliveries[b"later"]
    # level 10, not the broker's default level 3 (0.3 s), on the brokers' clock (less 1 ms: a store time
    # is in whole milliseconds)
    assert again - first >= 1.0 - 0.0011, again - first
    assert len(deliveries[b"dead"]) == 1


async def test_failures_in_a_pulled_batch_spread_over_threads_are_retried_alone(cluster: LocalCluster) -> None:
    """Ten messages stored together come in one pull and are spread over the consume threads; the odd
    ones fail once. Each odd one comes back once (reconsume_times 1), the even ones never, and the
    queue's offset passes all ten."""
    seen: list[tuple[bytes, int]] = []
    lock = threading.Lock()

    def listener(messages: list[MessageExt]) -> bool:
        (message,) = messages
        time.sleep(0.05)
        with lock:
            seen.append((message.body, message.reconsume_times))
        return message.reconsume_times > 0 or int(message.body.split(b"-")[1]) % 2 == 0

    consumer = PushConsumer(retrying_config(cluster, "SPREADFAIL"), listener)
    consumer.subscribe("Jobs")
    await consumer.start()
    await pulling_retries_everywhere(consumer, cluster)
    try:
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
            sent = await producer.send_batch([Message("Jobs", b"batch-%d" % n) for n in range(10)])
        await eventually(lambda: len(seen) == 15, timeout_s=15)
        await asyncio.sleep(0.5)  # time for a (wrong) 16th call: a slow machine brings fewer, never a false failure
        queue = sent.message_queue
        await eventually(lambda: consumer.consume_offset(queue) == 10)
    finally:
        await consumer.aclose()
    firsts = sorted(body for body, times in seen if times == 0)
    retries = sorted(body for body, times in seen if times == 1)
    assert firsts == sorted(b"batch-%d" % n for n in range(10))
    assert retries == sorted(b"batch-%d" % n for n in range(1, 10, 2))
    assert len(seen) == 15
