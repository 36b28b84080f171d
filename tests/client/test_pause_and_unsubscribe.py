"""Stopping part of what a consumer consumes, and starting it again: a push consumer's suspend() and
resume(), a pull consumer's pause() and resume() of queues, and unsubscribe() on both."""

from __future__ import annotations

import asyncio
import time

from rocketq.client import Message, MessageQueue, Producer, PullConsumer, PushConsumer
from rocketq.client.admin import AdminClient
from rocketq.testing import LocalCluster, eventually

from .helpers import TOPIC, consumer_config, opened, poll_until, send

OTHER = "Invoices"


async def test_a_suspended_push_consumer_pulls_nothing_until_resumed(cluster: LocalCluster) -> None:
    got: list[bytes] = []
    consumer = opened(PushConsumer(consumer_config(cluster, "SUSP"), lambda ms: got.extend(m.body for m in ms)))
    consumer.subscribe(TOPIC)
    await consumer.start()
    first = await send(cluster, 8, "first")
    await eventually(lambda: sorted(got) == sorted(first))
    consumer.suspend()
    await asyncio.sleep(0.2)  # pulls held at the broker when it was suspended may still bring messages
    got.clear()
    held_back = await send(cluster, 40, "held")
    # time to (wrongly) pull more: a slow machine pulls less meanwhile, so it can only make the count
    # below less sensitive, never fail it
    await asyncio.sleep(1.5)
    taken_while_suspended = len(got)
    consumer.resume()
    await eventually(lambda: set(held_back) <= set(got))
    # only pulls already held at the broker when it was suspended return (one per queue, 8 queues)
    assert taken_while_suspended < 20
    await consumer.aclose()


async def test_a_paused_queue_is_neither_fetched_nor_returned_by_poll_until_resumed(cluster: LocalCluster) -> None:
    consumer = opened(PullConsumer(consumer_config(cluster, "PAUSE")))
    queues = sorted(await consumer.fetch_queues(TOPIC))
    await consumer.assign(queues)
    await consumer.start()
    paused = queues[0]
    consumer.pause([paused])
    assert consumer.paused == {paused}

    def name(queue: MessageQueue, number: int) -> bytes:
        return f"{queue.broker_name}-{queue.queue_id}-{number}".encode()

    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        for queue in queues:
            for number in range(3):
                await producer.send_orderly(Message(TOPIC, name(queue, number)), selector=lambda qs, m, a: a, arg=queue)
    got: list[bytes] = []
    expected = sorted(name(q, n) for q in queues[1:] for n in range(3))
    await poll_until(consumer, lambda ms: got.extend(m.body for m in ms), lambda: set(expected) <= set(got), "unpaused")
    # one more poll for the paused queue's to (wrongly) come: a slow machine brings fewer, never a false failure
    got.extend(m.body for m in await consumer.poll(0.5))
    assert sorted(got) == expected  # all but the paused queue's
    consumer.resume([paused])
    late: list[bytes] = []
    await poll_until(consumer, lambda ms: late.extend(m.body for m in ms), lambda: len(late) >= 3, "resumed")
    assert late == [name(paused, n) for n in range(3)]
    await consumer.aclose()


async def test_unsubscribing_a_topic_drops_its_queues_and_the_brokers_forget_it(cluster: LocalCluster) -> None:
    async with AdminClient(cluster.namesrv_addr) as admin:
        await admin.update_topic(OTHER, cluster="DefaultCluster", read_queues=2, write_queues=2)
    got: list[bytes] = []
    consumer = opened(
        PushConsumer(
            consumer_config(cluster, "UNSUB", rebalance_interval_s=60.0), lambda ms: got.extend(m.body for m in ms)
        )
    )
    consumer.subscribe(TOPIC)
    consumer.subscribe(OTHER)
    await consumer.start()
    await eventually(lambda: {q.topic for q in consumer.assigned_queues} >= {TOPIC, OTHER})
    consumer.unsubscribe(OTHER)
    await eventually(lambda: OTHER not in {q.topic for q in consumer.assigned_queues})
    await eventually(lambda: all(OTHER not in b.clients.consumers["UNSUB"].subscriptions for b in cluster.brokers))
    kept = await send(cluster, 6, "kept")
    dropped = await send(cluster, 6, "dropped", topic=OTHER)
    await eventually(lambda: set(kept) <= set(got))
    # time for them to (wrongly) arrive: a slow machine brings fewer, never a false failure
    await asyncio.sleep(0.5)
    assert not set(dropped) & set(got)
    await consumer.aclose()


async def test_closing_stops_a_slow_listener_after_its_current_call_not_its_whole_share(
    cluster: LocalCluster,
) -> None:
    await send(cluster, 320)  # 40 per queue: a pulled batch of 32 holds 32 listener calls
    calls: list[float] = []

    def slow(messages: list[object]) -> None:
        calls.append(time.monotonic())
        time.sleep(0.3)

    # two threads: each pulled batch is split in two, many listener calls of 0.3 s for each thread
    consumer = opened(PushConsumer(consumer_config(cluster, "SLOW", consume_thread_max=2, consume_thread_min=1), slow))
    consumer.subscribe(TOPIC)
    await consumer.start()
    await eventually(lambda: len(calls) >= 2)
    in_hand = len(calls)
    await consumer.aclose()  # the calls in progress end; the rest of their shares is not consumed
    # Each thread's share of a pulled batch is 16 calls, and closing waits for the calls in hand only: a
    # thread may start another call only until the queues are dropped, at the start of closing (a stall
    # of over two seconds would be needed to start 16).
    assert len(calls) - in_hand < 16, len(calls) - in_hand
