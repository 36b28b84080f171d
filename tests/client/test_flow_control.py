"""Consumers stop pulling a queue while too much of it waits unconsumed (pull_threshold_for_queue,
pull_threshold_size_for_queue_mib), and take it up again once some is consumed. What was pulled is
counted from the broker's answers: every message of TOPIC is stored before the consumer starts, so
each pull is answered at once (none is held by long polling)."""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from rocketq.client import ConsumerConfig, Message, MessageQueue, Producer, PullConsumer, PushConsumer
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageExt
from rocketq.protocol import PullMessageRequestHeader, RemotingCommand, RequestCode, ResponseCode
from rocketq.testing import LocalCluster, eventually

from .broker_taps import tap
from .helpers import TOPIC, close_opened, consumer_config, opened, send

QueueKey = tuple[str, int]  # broker name, queue id


def pulled_per_queue(cluster: LocalCluster, group: str) -> Counter[QueueKey]:
    """How many messages of TOPIC the brokers handed to ``group``, per queue."""
    pulled: Counter[QueueKey] = Counter()
    for broker in cluster.brokers:

        def seen(
            request: RemotingCommand, response: RemotingCommand | None, name: str = broker.config.broker_name
        ) -> None:
            header = PullMessageRequestHeader.from_ext_fields(request.ext_fields)
            if header.consumer_group != group or header.topic != TOPIC or response is None:
                return
            if response.code == ResponseCode.SUCCESS:
                pulled[name, header.queue_id] += int(response.ext_fields["nextBeginOffset"]) - header.queue_offset

        tap(broker, RequestCode.PULL_MESSAGE, seen)
    return pulled


async def settle(pulled: Counter[QueueKey], queues: int, at_least: int) -> None:
    """Wait until ``queues`` queues were pulled ``at_least`` messages each, then until the pulling stopped
    (a slow machine pulls less in the pause: it can only make the upper bounds checked after less sensitive)."""
    await eventually(lambda: len(pulled) == queues and all(count >= at_least for count in pulled.values()))
    while True:
        before = dict(pulled)
        await asyncio.sleep(0.5)
        if dict(pulled) == before:
            return


async def send_bodies(cluster: LocalCluster, bodies: list[bytes]) -> None:
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        for body in bodies:
            await producer.send(Message(TOPIC, body))


async def test_pull_consumer_buffers_at_most_threshold_plus_one_batch_per_queue(cluster: LocalCluster) -> None:
    """Messages, not pulls, are counted: 16 KiB bodies come some 16 to a pull (the broker's 256 KiB
    max_pull_bytes) however many the consumer asks for (32), and a queue still fills to 50."""
    bodies = [os.urandom(16 * 1024) for _ in range(8 * 80)]  # 80 a queue
    await send_bodies(cluster, bodies)
    pulled = pulled_per_queue(cluster, "Buffered")
    consumer = opened(
        PullConsumer(consumer_config(cluster, "Buffered", pull_threshold_for_queue=50, pull_batch_size=32))
    )
    consumer.subscribe(TOPIC)
    await consumer.start()
    await settle(pulled, 8, 50)
    assert all(50 <= count <= 50 + 32 for count in pulled.values()), pulled

    first = await consumer.poll(1.0)
    broker_names = {broker.address: broker.config.broker_name for broker in cluster.brokers}
    polled_queue = (broker_names[first[0].store_host], first[0].queue_id)
    before = pulled[polled_queue]
    await eventually(lambda: pulled[polled_queue] > before)  # that queue is pulled again
    got = [m.body for m in first]
    while len(got) < len(bodies):
        batch = await consumer.poll(5.0)
        assert batch, f"{len(got)} of {len(bodies)} polled"
        got.extend(m.body for m in batch)
    assert sorted(got) == sorted(bodies)
    await consumer.aclose()


def queue_a0(queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
    return next(q for q in queues if q.broker_name == "broker-a" and q.queue_id == 0)


async def test_pull_consumer_pauses_a_queue_at_its_size_threshold(cluster: LocalCluster) -> None:
    big = [os.urandom(64 * 1024) for _ in range(40)]  # 2.5 MiB, over a 1 MiB threshold
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        for body in big:
            await producer.send_orderly(Message(TOPIC, body), selector=queue_a0)
    pulled = pulled_per_queue(cluster, "Sized")
    config = consumer_config(cluster, "Sized", pull_threshold_size_for_queue_mib=1, pull_batch_size=6)
    consumer = opened(PullConsumer(config))
    queue = queue_a0(await consumer.fetch_queues(TOPIC), Message(TOPIC, b""), None)
    await consumer.assign([queue])
    await consumer.start()
    await settle(pulled, 1, 16)
    assert 16 <= pulled["broker-a", 0] < 16 + 6  # 1 MiB is 16 bodies: the pull that reached it was the last

    got: list[bytes] = []
    while len(got) < len(big):
        batch = await consumer.poll(5.0)
        assert batch, f"{len(got)} of {len(big)} polled"
        got.extend(m.body for m in batch)
    assert got == big
    await consumer.aclose()


async def test_push_consumer_caches_at_most_threshold_plus_one_batch_while_its_listener_blocks(
    cluster: LocalCluster,
) -> None:
    await cache_while_blocked(cluster, "Blocked", 60, per_queue=20, pull_threshold_for_queue=20, pull_batch_size=8)


async def cache_while_blocked(
    cluster: LocalCluster, group: str, each_queue: int, *, per_queue: int, pull_batch_size: int, **settings: object
) -> None:
    """With ``each_queue`` messages in each of TOPIC's 8 queues and a listener that blocks, every queue is
    pulled to between ``per_queue`` and one batch more, and nothing is consumed; released, everything is."""
    bodies = await send(cluster, 8 * each_queue)
    pulled = pulled_per_queue(cluster, group)
    release = threading.Event()
    consumed: list[bytes] = []
    lock = threading.Lock()

    def listener(messages: list[MessageExt]) -> None:
        release.wait()
        with lock:
            consumed.extend(m.body for m in messages)

    config = consumer_config(cluster, group, pull_batch_size=pull_batch_size, **settings)
    consumer = opened(PushConsumer(config, listener))
    consumer.subscribe(TOPIC)
    try:
        await consumer.start()
        await settle(pulled, 8, per_queue)
        assert all(per_queue <= count <= per_queue + pull_batch_size for count in pulled.values()), pulled
        assert consumed == []
    finally:
        release.set()
    await eventually(lambda: len(consumed) >= len(bodies))
    assert sorted(consumed) == sorted(bodies)
    await consumer.aclose()


async def test_unfinished_messages_spread_wider_than_the_max_span_stop_the_queue_from_pulling(
    cluster: LocalCluster,
) -> None:
    """consume_concurrently_max_span (RocketMQ's, over the messages not yet consumed): with every listener
    call blocked, a queue is pulled until its unfinished messages span more than 10 offsets, then no
    more; released, everything is consumed."""
    queue = MessageQueue(TOPIC, cluster.brokers[0].config.broker_name, 0)
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        for number in range(60):
            await producer.send_orderly(Message(TOPIC, b"span-%d" % number), selector=lambda qs, m, a: a, arg=queue)
    release = threading.Event()
    started: list[int] = []
    done: list[int] = []

    def listener(messages: list[MessageExt]) -> None:
        started.append(messages[0].queue_offset)
        release.wait(20)
        done.extend(message.queue_offset for message in messages)

    config = consumer_config(cluster, "SPAN", consume_concurrently_max_span=10, pull_batch_size=4)
    consumer = opened(PushConsumer(config, listener))
    consumer.subscribe(TOPIC)
    await consumer.start()
    await eventually(lambda: len(started) >= 12)
    # no more start while these wait (a slow machine starts fewer meanwhile: never a false failure)
    await asyncio.sleep(0.5)
    in_flight = sorted(started)
    release.set()
    await eventually(lambda: sorted(done) == list(range(60)))
    await consumer.aclose()
    # batches of 4 from offset 0: pulling stops after the one reaching offset 11 (span 11 > 10); each
    # message had a thread of its own, so twelve calls were waiting (twenty, every thread, without it)
    assert in_flight == list(range(12)), in_flight


async def test_a_listener_call_running_past_the_consume_timeout_is_given_up_and_retried(tmp_path: Path) -> None:
    """consume_timeout_s (RocketMQ's consumeTimeout): a call that does not return in time has its message
    sent back for a retry and counted as consumed, so its queue's commit offset moves past it."""
    fast_levels = " ".join(f"{100 * (i + 1)}ms" for i in range(18))  # the retry (level 3) in 0.3 s
    async with LocalCluster(tmp_path, brokers=1, message_delay_level=fast_levels) as cluster:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.update_topic(TOPIC, cluster="DefaultCluster", read_queues=1, write_queues=1)
        try:
            await give_up_and_retry(cluster)
        finally:
            await close_opened()


async def give_up_and_retry(cluster: LocalCluster) -> None:
    queue = MessageQueue(TOPIC, cluster.brokers[0].config.broker_name, 0)
    release = threading.Event()
    seen: list[tuple[bytes, int]] = []
    stuck_since: list[float] = []
    timeout_s = 2.0

    def listener(messages: list[MessageExt]) -> None:
        (message,) = messages
        if message.body == b"stuck" and message.reconsume_times == 0:
            stuck_since.append(time.monotonic())
            release.wait(20)  # never returns in time
        seen.append((message.body, message.reconsume_times))

    consumer = opened(PushConsumer(consumer_config(cluster, "TIMEOUT", consume_timeout_s=timeout_s), listener))
    consumer.subscribe(TOPIC)
    await consumer.start()
    try:
        async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:

            async def send_to_queue(body: bytes) -> None:
                await producer.send_orderly(Message(TOPIC, body), selector=lambda qs, m, a: a, arg=queue)

            await send_to_queue(b"before")
            await eventually(lambda: (b"before", 0) in seen)
            await send_to_queue(b"stuck")
            await eventually(lambda: stuck_since)
            await send_to_queue(b"after")  # its own pull: consumed while "stuck" hangs
            await eventually(lambda: (b"after", 0) in seen)
        offset = consumer.consume_offset(queue)
        if time.monotonic() - stuck_since[0] < timeout_s:  # else a slow machine gave it up already: not checked
            assert offset == 1  # held at "stuck"
        await eventually(lambda: (b"stuck", 1) in seen)  # given up after the timeout, retried
        await eventually(lambda: consumer.consume_offset(queue) == 3)
    finally:
        release.set()
    await consumer.aclose()


@pytest.mark.parametrize("kind", ["plain", "coroutine"])
async def test_a_burst_into_one_queue_is_consumed_by_many_listener_calls_at_once(
    cluster: LocalCluster, kind: str
) -> None:
    """Twenty messages stored together in one queue come in one pull; with idle consume threads (or free
    coroutine slots) they are spread over them, as RocketMQ's one request per message would be, not
    consumed one after another."""
    running = most = 0
    lock = threading.Lock()
    done: list[bytes] = []

    def enter() -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)

    def leave(messages: list[MessageExt]) -> None:
        nonlocal running
        with lock:
            running -= 1
            done.extend(m.body for m in messages)

    def slow(messages: list[MessageExt]) -> None:
        enter()
        time.sleep(0.2)  # a listener waiting on I/O
        leave(messages)

    async def slow_coroutine(messages: list[MessageExt]) -> None:
        enter()
        await asyncio.sleep(0.2)
        leave(messages)

    listener = slow if kind == "plain" else slow_coroutine
    consumer = opened(PushConsumer(consumer_config(cluster, f"BURST-{kind}"), listener))
    consumer.subscribe(TOPIC)
    await consumer.start()
    await eventually(lambda: len(consumer.assigned_queues) >= 8)
    bodies = [b"burst-%d" % number for number in range(20)]
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        await producer.send_batch([Message(TOPIC, body) for body in bodies])  # one queue, one request
    await eventually(lambda: sorted(done) == sorted(bodies))
    await consumer.aclose()
    assert most >= 10, most  # the calls ran side by side, not one after another


async def test_a_spread_batch_keeps_whole_listener_calls(cluster: LocalCluster) -> None:
    """With consume_message_batch_max_size 3, the twenty messages of one pull reach the listener as six
    calls of three and one of two, however the pulled batch is spread over the threads."""
    sizes: list[int] = []
    lock = threading.Lock()

    def listener(messages: list[MessageExt]) -> None:
        time.sleep(0.05)
        with lock:
            sizes.append(len(messages))

    config = consumer_config(cluster, "WHOLE", consume_message_batch_max_size=3)
    consumer = opened(PushConsumer(config, listener))
    consumer.subscribe(TOPIC)
    await consumer.start()
    await eventually(lambda: len(consumer.assigned_queues) >= 8)
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        await producer.send_batch([Message(TOPIC, b"whole-%d" % number) for number in range(20)])
    await eventually(lambda: sum(sizes) == 20)
    await consumer.aclose()
    assert sorted(sizes) == [2, 3, 3, 3, 3, 3, 3]


async def test_push_consumer_shares_the_topic_threshold_out_over_its_queues(cluster: LocalCluster) -> None:
    """pull_threshold_for_topic (RocketMQ's pullThresholdForTopic): 40 for a member holding all 8 queues
    is 5 a queue, in place of the per-queue 1,000."""
    assert consumer_config(cluster, "TopicLimit", pull_threshold_for_topic=40).queue_limits(8) == (5, 100 * 1024 * 1024)
    await cache_while_blocked(cluster, "TopicLimit", 30, per_queue=5, pull_threshold_for_topic=40, pull_batch_size=2)


def test_topic_thresholds_replace_the_queue_ones_with_an_equal_share_of_at_least_one() -> None:
    config = ConsumerConfig(group="g", pull_threshold_for_topic=10_000, pull_threshold_size_for_topic_mib=300)
    assert config.queue_limits(4) == (2_500, 75 * 1024 * 1024)  # more than the per-queue 1,000: replaced
    assert config.queue_limits(0) == (10_000, 300 * 1024 * 1024)  # (no queue yet: all of it)
    assert ConsumerConfig(group="g", pull_threshold_for_topic=3).queue_limits(8)[0] == 1
    assert ConsumerConfig(group="g").queue_limits(8) == (1000, 100 * 1024 * 1024)  # off: the per-queue ones
    with pytest.raises(ValueError, match="pull_threshold_for_topic must be -1"):
        ConsumerConfig(group="g", pull_threshold_for_topic=0)
    with pytest.raises(ValueError, match="pull_threshold_size_for_topic_mib must be -1"):
        ConsumerConfig(group="g", pull_threshold_size_for_topic_mib=-5)
    with pytest.raises(ValueError, match="pull_interval_s must be 0 or more"):
        ConsumerConfig(group="g", pull_interval_s=-0.1)


async def test_push_consumer_waits_pull_interval_after_each_pull_that_found_messages(cluster: LocalCluster) -> None:
    """pull_interval_s (RocketMQ's pullInterval): a backlog of 6 in one queue, pulled 2 at a time, comes
    in pulls at least the interval apart."""
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        for number in range(6):
            await producer.send_orderly(Message(TOPIC, b"paced-%d" % number), selector=queue_a0)
    found_at: list[float] = []

    def seen(request: RemotingCommand, response: RemotingCommand | None) -> None:
        header = PullMessageRequestHeader.from_ext_fields(request.ext_fields)
        if header.consumer_group == "Paced" and header.queue_id == 0 and response is not None:
            found_at.extend([time.monotonic()] if response.code == ResponseCode.SUCCESS else [])

    broker_a = next(broker for broker in cluster.brokers if broker.config.broker_name == "broker-a")
    tap(broker_a, RequestCode.PULL_MESSAGE, seen)
    consumed: list[bytes] = []
    config = consumer_config(cluster, "Paced", pull_interval_s=0.4, pull_batch_size=2)
    consumer = opened(PushConsumer(config, lambda messages: consumed.extend(m.body for m in messages)))
    consumer.subscribe(TOPIC)
    await consumer.start()
    await eventually(lambda: len(consumed) == 6, timeout_s=10)
    await consumer.aclose()
    assert sorted(consumed) == sorted(b"paced-%d" % number for number in range(6))
    assert len(found_at) == 3, found_at
    assert all(later - earlier >= 0.39 for earlier, later in itertools.pairwise(found_at)), found_at
