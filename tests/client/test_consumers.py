"""Push and pull consumers against a real in-process cluster (NameServer + two Brokers)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from rocketq.client import (
    ClientConfig,
    ConsumeFromWhere,
    ConsumerConfig,
    Message,
    MessageModel,
    Producer,
    PullConsumer,
    PushConsumer,
)
from rocketq.client.admin import AdminClient
from rocketq.client.consumer_core import ConsumerCore
from rocketq.client.errors import MQClientError
from rocketq.client.message import MessageExt, MessageQueue
from rocketq.testing import FakeClock, LocalCluster, eventually

from .broker_taps import pulled_with
from .helpers import TOPIC, consumer_config, opened, poll_until, send
from .sentinels import send_sentinels


def topic_queues(consumer: PushConsumer) -> set[object]:
    return {q for q in consumer.assigned_queues if q.topic == TOPIC}


async def test_group_members_share_queues_and_rebalance(cluster: LocalCluster) -> None:
    received: Counter[bytes] = Counter()

    def listener(messages: list[MessageExt]) -> None:
        received.update(m.body for m in messages)

    members = [opened(PushConsumer(consumer_config(cluster), listener)) for _ in range(3)]
    for member in members[:2]:
        member.subscribe(TOPIC)
        await member.start()
    await eventually(lambda: all(len(topic_queues(m)) == 4 for m in members[:2]))
    assert topic_queues(members[0]).isdisjoint(topic_queues(members[1]))
    first = await send(cluster, 80, "a")
    await eventually(lambda: all(received[b] >= 1 for b in first))

    members[2].subscribe(TOPIC)
    await members[2].start()
    await eventually(lambda: sorted(len(topic_queues(m)) for m in members) == [2, 3, 3])
    owned = [topic_queues(m) for m in members]
    assert sum(len(q) for q in owned) == 8 and len(set().union(*owned)) == 8  # no queue owned twice
    second = await send(cluster, 80, "b")
    await eventually(lambda: all(received[b] >= 1 for b in second))

    await members[0].aclose()
    await members[1].aclose()
    await eventually(lambda: len(topic_queues(members[2])) == 8)
    third = await send(cluster, 80, "c")
    await eventually(lambda: all(received[b] >= 1 for b in third))
    await members[2].aclose()
    duplicates = sum(count - 1 for count in received.values())
    assert set(received) == set(first + second + third)
    assert duplicates <= 20, duplicates  # only around rebalances


async def test_a_member_joining_is_rebalanced_at_once_not_at_the_next_period(cluster: LocalCluster) -> None:
    """The members' clock never moves, so no periodic rebalance runs: only the broker's
    NOTIFY_CONSUMER_IDS_CHANGED can make the first member give up half its queues."""
    clock = FakeClock()

    def config(n: int) -> ConsumerConfig:
        client = ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name=f"n{n}", clock=clock)
        return consumer_config(cluster, "N", client=client, rebalance_interval_s=60.0)

    members = [opened(PushConsumer(config(0), lambda ms: None))]
    members[0].subscribe(TOPIC)
    await members[0].start()
    total = len([q for q in members[0].assigned_queues if q.topic == TOPIC])
    assert total == 8  # two brokers, four queues each
    members.append(opened(PushConsumer(config(1), lambda ms: None)))
    members[1].subscribe(TOPIC)
    await members[1].start()

    def split() -> bool:
        owned = [{q for q in m.assigned_queues if q.topic == TOPIC} for m in members]
        return len(owned[0]) == len(owned[1]) == total // 2 and not owned[0] & owned[1]

    await eventually(split, what="the queues split between the members")  # (a bound on a hang only)
    for member in members:
        await member.aclose()


async def test_subscribing_again_with_other_tags_changes_what_a_running_consumer_gets(cluster: LocalCluster) -> None:
    got: list[bytes] = []
    config = consumer_config(cluster, "RETAG", broker_suspend_max_time_ms=500)
    consumer = opened(PushConsumer(config, lambda ms: got.extend(m.body for m in ms)))
    consumer.subscribe(TOPIC, "TagA")
    await consumer.start()
    retagged = pulled_with(cluster.brokers, "RETAG", TOPIC, "TagB")
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:

        async def send_tagged(body: bytes, tags: str) -> None:
            await producer.send(Message(TOPIC, body, tags=tags))

        await send_tagged(b"a1", "TagA")
        await send_tagged(b"b1", "TagB")
        await eventually(lambda: got == [b"a1"])
        consumer.subscribe(TOPIC, "TagB")  # the queues keep going; their next pulls filter by TagB
        await eventually(lambda: len(retagged) == 8)  # pulls held with the old filter returned (0.5 s here)
        await send_tagged(b"a2", "TagA")
        await send_tagged(b"b2", "TagB")
    sentinels = await send_sentinels(cluster, TOPIC, tags="TagB")  # after a2 on its queue: nothing else comes
    await eventually(lambda: set(sentinels) <= set(got))
    assert got[0] == b"a1" and sorted(got[1:]) == sorted([b"b2", *sentinels])
    await consumer.aclose()


async def test_a_pull_consumer_subscribing_again_with_other_tags_gets_the_new_ones(cluster: LocalCluster) -> None:
    consumer = opened(PullConsumer(consumer_config(cluster, "RETAGP", broker_suspend_max_time_ms=500)))
    consumer.subscribe(TOPIC, "TagA")
    await consumer.start()
    retagged = pulled_with(cluster.brokers, "RETAGP", TOPIC, "TagB")
    got: list[bytes] = []

    async def poll_for(*bodies: bytes) -> None:  # (what arrived is asserted below, not when)
        await poll_until(consumer, lambda ms: got.extend(m.body for m in ms), lambda: set(bodies) <= set(got), "tags")

    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        await producer.send(Message(TOPIC, b"a1", tags="TagA"))
        await producer.send(Message(TOPIC, b"b1", tags="TagB"))
        await poll_for(b"a1")
        consumer.subscribe(TOPIC, "TagB")
        await eventually(lambda: len(retagged) == 8)  # pulls held with the old filter returned (0.5 s here)
        await producer.send(Message(TOPIC, b"a2", tags="TagA"))
        await producer.send(Message(TOPIC, b"b2", tags="TagB"))
    sentinels = await send_sentinels(cluster, TOPIC, tags="TagB")  # after a2 on its queue: nothing else comes
    await poll_for(*sentinels)
    assert got[0] == b"a1" and sorted(got[1:]) == sorted([b"b2", *sentinels])
    await consumer.aclose()


def broadcasting_config(cluster: LocalCluster, store_dir: Path, instance_name: str) -> ConsumerConfig:
    client = ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name=instance_name)
    return consumer_config(
        cluster, "B", message_model=MessageModel.BROADCASTING, offset_store_dir=store_dir, client=client
    )


async def test_broadcasting_gives_every_member_everything(cluster: LocalCluster, tmp_path: Path) -> None:
    """Two members on one host, one offsets folder: each keeps its own file (by instance name), gets
    every message, and resumes from its own offsets after a restart."""
    store_dir = tmp_path / "offsets"
    got: list[list[bytes]] = [[], []]
    members = []
    for index in range(2):
        config = broadcasting_config(cluster, store_dir, f"member-{index}")
        member = opened(PushConsumer(config, lambda ms, index=index: got[index].extend(m.body for m in ms)))  # type: ignore[misc]
        member.subscribe(TOPIC)
        members.append(await member.start())
    bodies = await send(cluster, 40)
    await eventually(lambda: all(sorted(g) == sorted(bodies) for g in got))
    await members[0].aclose()
    more = await send(cluster, 10, "more")  # only member 1 is running
    await eventually(lambda: sorted(got[1]) == sorted(bodies + more))
    await members[1].aclose()
    files = sorted(path.relative_to(store_dir).as_posix() for path in store_dir.rglob("offsets.json"))
    assert [name.split("/", 1)[0].split("@")[1] for name in files] == ["member-0", "member-1"]
    # a restarted member resumes after what it consumed: member 0 gets what it missed, nothing more
    later = await send(cluster, 10, "later")
    again: list[bytes] = []
    restarted = opened(
        PushConsumer(broadcasting_config(cluster, store_dir, "member-0"), lambda ms: again.extend(m.body for m in ms))
    )
    restarted.subscribe(TOPIC)
    await restarted.start()
    sentinels = await send_sentinels(cluster, TOPIC)  # after everything else on each queue
    await eventually(lambda: set(sentinels) <= set(again))
    assert sorted(again) == sorted(more + later + sentinels)
    await restarted.aclose()


async def test_broadcasting_members_with_one_identity_on_one_host_are_refused(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """Same group, same client address and instance name, same folder: the second member would overwrite
    the first one's offsets, so it does not start, with an error that says what to change."""
    first = opened(PushConsumer(broadcasting_config(cluster, tmp_path, "twin"), lambda ms: None))
    first.subscribe(TOPIC)
    await first.start()
    second = PushConsumer(broadcasting_config(cluster, tmp_path, "twin"), lambda ms: None)
    second.subscribe(TOPIC)
    with pytest.raises(MQClientError, match="give each member its own instance_name"):
        await second.start()
    await first.aclose()
    third = opened(PushConsumer(broadcasting_config(cluster, tmp_path, "twin"), lambda ms: None))
    third.subscribe(TOPIC)
    await third.start()  # the first one let go when it closed
    await third.aclose()


async def test_group_resumes_from_committed_offsets_after_restarts(cluster: LocalCluster) -> None:
    first_run: list[bytes] = []
    consumer = opened(PushConsumer(consumer_config(cluster, "R"), lambda ms: first_run.extend(m.body for m in ms)))
    consumer.subscribe(TOPIC)
    await consumer.start()
    bodies = await send(cluster, 30)
    await eventually(lambda: sorted(first_run) == sorted(bodies))
    await consumer.aclose()
    for index, broker in enumerate(list(cluster.brokers)):  # restart both brokers
        await broker.aclose()
        await cluster.start_broker(index)
    more = await send(cluster, 20, "after-restart")
    second_run: list[bytes] = []
    consumer = opened(PushConsumer(consumer_config(cluster, "R"), lambda ms: second_run.extend(m.body for m in ms)))
    consumer.subscribe(TOPIC)
    await consumer.start()
    sentinels = await send_sentinels(cluster, TOPIC)  # after everything else on each queue
    await eventually(lambda: set(sentinels) <= set(second_run))
    assert sorted(second_run) == sorted(more + sentinels)  # nothing lost, nothing from before the restart again
    await consumer.aclose()


async def test_tag_filtering_in_push_consumer(cluster: LocalCluster) -> None:
    seen: list[tuple[str | None, bytes]] = []
    consumer = opened(PushConsumer(consumer_config(cluster, "T"), lambda ms: seen.extend((m.tags, m.body) for m in ms)))
    consumer.subscribe(TOPIC, "TagA || TagC")
    await consumer.start()
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        for i in range(30):
            await producer.send(Message(TOPIC, b"x", tags=f"Tag{'ABC'[i % 3]}"))
    sentinels = await send_sentinels(cluster, TOPIC, tags="TagC")  # after the 30 on each queue
    await eventually(lambda: set(sentinels) <= {body for _, body in seen})
    assert Counter(tags for tags, body in seen if body == b"x") == {"TagA": 10, "TagC": 10}
    await consumer.aclose()


async def test_async_listener(cluster: LocalCluster) -> None:
    seen: list[bytes] = []

    async def listener(messages: list[MessageExt]) -> bool:
        await asyncio.sleep(0)
        seen.extend(m.body for m in messages)
        return True

    consumer = opened(PushConsumer(consumer_config(cluster, "A", consume_message_batch_max_size=4), listener))
    consumer.subscribe(TOPIC)
    await consumer.start()
    bodies = await send(cluster, 25)
    await eventually(lambda: sorted(seen) == sorted(bodies))
    await consumer.aclose()


async def test_async_listener_runs_in_its_own_task(cluster: LocalCluster) -> None:
    """A coroutine listener may use what needs a current task (``asyncio.timeout``) as in any task: a
    timeout that expires cancels the listener's own wait, never the consumer's pulling."""
    timed_out: list[bytes] = []
    seen: list[bytes] = []

    async def listener(messages: list[MessageExt]) -> bool:
        assert asyncio.current_task() is not None
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(5)
        except TimeoutError:
            timed_out.extend(m.body for m in messages)
        seen.extend(m.body for m in messages)
        return True

    consumer = opened(PushConsumer(consumer_config(cluster, "T"), listener))
    consumer.subscribe(TOPIC)
    await consumer.start()
    first = await send(cluster, 8, "first")
    await eventually(lambda: set(first) <= set(timed_out), what="the first messages' listener timeouts")
    second = await send(cluster, 8, "second")  # the queues are still being pulled
    await eventually(lambda: set(second) <= set(seen), what="the second messages")
    await consumer.aclose()


async def test_plain_listener_runs_on_up_to_consume_thread_max_threads(cluster: LocalCluster) -> None:
    """A slow plain-function listener is called from several consume threads at once, never more than
    ``consume_thread_max``, and every message is consumed once."""
    seen: list[bytes] = []
    running = 0
    most = 0
    lock = threading.Lock()

    def listener(messages: list[MessageExt]) -> bool:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.05)  # a listener doing I/O
        with lock:
            running -= 1
            seen.extend(m.body for m in messages)
        return True

    bodies = await send(cluster, 40)
    consumer = opened(
        PushConsumer(consumer_config(cluster, "Slow", consume_thread_min=1, consume_thread_max=3), listener)
    )
    consumer.subscribe(TOPIC)
    await consumer.start()
    await eventually(lambda: sorted(seen) == sorted(bodies))
    assert 1 < most <= 3
    await consumer.aclose()


async def test_a_slow_coroutine_listener_runs_at_most_consume_thread_max_calls_at_once(cluster: LocalCluster) -> None:
    """A backlog pulled in batches of many messages: a slow coroutine listener's calls are spread over
    the slots (parts of a batch, and batches waiting for a free slot), never more than
    ``consume_thread_max`` at once, and every message is consumed once and settled."""
    seen: list[bytes] = []
    running = 0
    most = 0

    async def listener(messages: list[MessageExt]) -> bool:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.02)  # a listener waiting on I/O
        running -= 1
        seen.extend(m.body for m in messages)
        return True

    bodies = await send(cluster, 40)
    consumer = opened(
        PushConsumer(consumer_config(cluster, "SlowAsync", consume_thread_min=1, consume_thread_max=3), listener)
    )
    consumer.subscribe(TOPIC)
    await consumer.start()
    await eventually(lambda: sorted(seen) == sorted(bodies) and consumer.consumed == len(bodies))
    assert Counter(seen) == Counter(bodies)  # each once
    assert 1 < most <= 3
    await consumer.aclose()


async def test_pull_consumer_subscribe_poll_commit(cluster: LocalCluster) -> None:
    bodies = await send(cluster, 50)
    consumer = opened(PullConsumer(consumer_config(cluster, "L")))
    consumer.subscribe(TOPIC)
    await consumer.start()
    got: list[bytes] = []
    await poll_until(consumer, lambda ms: got.extend(m.body for m in ms), lambda: len(got) >= 50, "the 50 messages")
    assert sorted(got) == sorted(bodies)
    assert await consumer.poll(0.2) == []
    await consumer.commit()
    committed = [await consumer.committed(q) for q in sorted(consumer.assignment) if q.topic == TOPIC]
    assert sum(committed) == 50
    await consumer.aclose()


async def test_pull_consumer_assign_and_seek(cluster: LocalCluster) -> None:
    await send(cluster, 40)
    consumer = opened(PullConsumer(consumer_config(cluster, "S"), auto_commit=False))
    queues = await consumer.fetch_queues(TOPIC)
    queue = next(q for q in queues if q.broker_name == "broker-a" and q.queue_id == 0)
    await consumer.assign([queue])
    await consumer.start()
    first = await consumer.poll(5.0)
    assert first and first[0].queue_offset == 0 and {m.queue_id for m in first} == {0}
    consumer.seek(queue, 2)
    again = await consumer.poll(5.0)
    assert again[0].queue_offset == 2
    await consumer.seek_to_end(queue)
    assert await consumer.poll(0.3) == []
    await consumer.seek_to_begin(queue)
    from_begin = await consumer.poll(5.0)
    assert from_begin[0].queue_offset == 0
    assert await consumer.offset_for_timestamp(queue, 0) == 0
    assert await consumer.offset_for_timestamp(queue, int(time.time() * 1000) + 60_000) == len(first)
    # nothing committed yet: like Java's broker, ours answers 0 for a queue that still has message 0
    assert await consumer.committed(queue) == 0
    await consumer.commit()
    assert await consumer.committed(queue) == from_begin[-1].queue_offset + 1
    await consumer.aclose()


async def test_pull_consumer_started_first_then_assigned_as_in_java(cluster: LocalCluster) -> None:
    await send(cluster, 12)
    consumer = opened(PullConsumer(consumer_config(cluster, "S2"), auto_commit=False))
    await consumer.start()  # Java's order: start, fetch the queues, assign
    assert await consumer.poll(0.2) == []
    queue = next(q for q in await consumer.fetch_queues(TOPIC) if q.broker_name == "broker-b")
    await consumer.assign([queue])
    consumer.seek(queue, 0)
    polled = await consumer.poll(5.0)
    assert polled and {(m.topic, m.queue_id) for m in polled} == {(TOPIC, queue.queue_id)}
    with pytest.raises(MQClientError, match="do not mix"):
        consumer.subscribe(TOPIC)
    await consumer.aclose()


async def test_pull_consumer_async_iterator(cluster: LocalCluster) -> None:
    bodies = await send(cluster, 12)
    consumer = opened(PullConsumer(consumer_config(cluster, "I")))
    consumer.subscribe(TOPIC)
    await consumer.start()
    got = []
    async with asyncio.timeout(10):
        async for message in consumer:
            got.append(message.body)
            if len(got) == 12:
                break
    assert sorted(got) == sorted(bodies)
    await consumer.aclose()


async def test_a_queue_whose_start_offset_is_unknown_is_left_for_the_next_rebalance(cluster: LocalCluster) -> None:
    """No broker answers for the queue: it leaves the assignment (a later rebalance tries it again)
    instead of starting at 0, which would replay it whole."""

    async def nothing(queues: list[MessageQueue]) -> None:
        return None

    for where in ConsumeFromWhere:
        config = consumer_config(cluster, "SKIP", consume_from_where=where)
        core = ConsumerCore(config, consume_type="CONSUME_PASSIVELY", on_assigned=nothing, on_revoked=nothing)
        await core.instance.start()
        try:
            gone = MessageQueue(TOPIC, "broker-gone", 0)
            here = MessageQueue(TOPIC, "broker-a", 0)
            core.assigned = {gone, here}
            assert await core.start_offset_or_skip(gone) is None
            assert core.assigned == {here}
            assert await core.start_offset_or_skip(here) == 0
        finally:
            await core.instance.aclose()


@pytest.mark.parametrize("kind", ["orderly", "pull"])
async def test_a_reset_by_time_moves_a_running_orderly_or_pull_consumer_back(cluster: LocalCluster, kind: str) -> None:
    """The operator's RESET_CONSUMER_CLIENT_OFFSET reaches a running member, which consumes from the new
    offset at once (an orderly one in queue order again) and commits from there."""
    group = f"RESET-{kind}"
    first = await send(cluster, 12, "r")
    got: list[MessageExt] = []
    consumer: PushConsumer | PullConsumer
    if kind == "orderly":
        consumer = opened(PushConsumer(consumer_config(cluster, group), got.extend, orderly=True))
    else:
        consumer = opened(PullConsumer(consumer_config(cluster, group)))
    consumer.subscribe(TOPIC)
    await consumer.start()

    async def collect(count: int) -> None:  # (the waits bound a hang only: what arrived is asserted)
        if isinstance(consumer, PullConsumer):
            await poll_until(consumer, got.extend, lambda: len(got) >= count, f"{count} messages")
        else:
            await eventually(lambda: len(got) >= count, what=f"{count} messages")
        assert len(got) == count

    await collect(12)
    if isinstance(consumer, PullConsumer):
        await consumer.commit()
    await eventually(lambda: sum(sum(b.offsets.offsets_of(group, TOPIC).values()) for b in cluster.brokers) == 12)
    async with AdminClient(cluster.namesrv_addr) as admin:
        offsets = await admin.reset_offset_by_time(group, TOPIC, 0)
    assert {o.offset for o in offsets} == {0}
    await collect(24)
    again = got[12:]
    assert sorted(m.body for m in again) == sorted(first)  # every message once more
    if kind == "orderly":
        by_queue: dict[tuple[str, int], list[int]] = {}
        for message in again:
            by_queue.setdefault((message.store_host, message.queue_id), []).append(message.queue_offset)
        assert all(offsets == list(range(len(offsets))) for offsets in by_queue.values()), by_queue
    sentinels = await send_sentinels(cluster, TOPIC)  # after the twelve on each queue
    await collect(24 + len(sentinels))
    assert sorted(m.body for m in got[24:]) == sorted(sentinels)  # and nothing beyond
    await consumer.aclose()


async def test_a_reset_during_orderly_consumption_is_not_undone_by_the_message_in_hand(cluster: LocalCluster) -> None:
    """A slow orderly listener has messages in hand when the reset arrives: finishing them must not
    move the queues' offsets past the reset, so every message is consumed (again) after it."""
    seen: Counter[tuple[str, int, int]] = Counter()

    def slow(messages: list[MessageExt]) -> None:
        time.sleep(0.1)
        for message in messages:
            seen[(message.store_host, message.queue_id, message.queue_offset)] += 1

    await send(cluster, 24, "slow")
    consumer = opened(PushConsumer(consumer_config(cluster, "RESET-busy"), slow, orderly=True))
    consumer.subscribe(TOPIC)
    await consumer.start()
    await eventually(lambda: sum(seen.values()) >= 8)  # in the middle of it: a message in hand per queue
    async with AdminClient(cluster.namesrv_addr) as admin:
        await admin.reset_offset_by_time("RESET-busy", TOPIC, 0)
    before_reset = Counter(seen)  # a message finishing right now may count here: harmless, it only asks more

    def all_again() -> bool:
        return len(seen) == 24 and all(seen[key] > before_reset[key] for key in seen)

    try:
        await eventually(all_again, timeout_s=20)
    except AssertionError:
        raise AssertionError(sorted((key, before_reset[key], seen[key]) for key in seen)) from None
    await consumer.aclose()
