"""A push consumer hands a pulled batch to its coroutine listener in the read that brought the pull's
answer: ahead of a task that an earlier read of the same loop turn woke (on a host running a producer
beside the consumer, the producer's next send; docs/consume-path.md).

The two answers are written in one callback of the broker's loop, the competitor's first: the arrival
of the message (a store arrival listener put ahead of the broker's long polling) writes the competitor's
answer, and the long polling then answers the held pull. Nothing depends on how many loop turns the
send, the put or a request to the competitor take, or on the host's load between them."""

from __future__ import annotations

import asyncio
import threading

from rocketq.client import Message, Producer, PushConsumer
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageExt
from rocketq.protocol import RemotingCommand, ResponseCode, make_request, make_response
from rocketq.remoting import Connection, RemotingClient, RemotingServer
from rocketq.remoting.connection import next_opaque
from rocketq.testing import LocalCluster, eventually

from .helpers import consumer_config, opened

TOPIC_ONE_QUEUE = "Handover"
HOLD = 9201  # answered when ``release`` is called


class Competitor:
    """A server holding one request until ``release`` (from the loop's thread) writes its answer."""

    def __init__(self) -> None:
        self.held: list[tuple[RemotingCommand, Connection]] = []
        self.holding = asyncio.Event()
        self.server = RemotingServer({HOLD: self.hold}, host="127.0.0.1", port=0)

    async def hold(self, request: RemotingCommand, connection: Connection) -> None:
        self.held.append((request, connection))
        self.holding.set()

    def release(self) -> None:
        for held, on in self.held:
            on.send(make_response(held, ResponseCode.SUCCESS))
        self.held.clear()


async def test_a_coroutine_listener_gets_its_batch_before_a_task_woken_earlier_in_the_same_turn(
    cluster: LocalCluster,
) -> None:
    broker = cluster.brokers[0]
    competitor = Competitor()
    async with AdminClient(cluster.namesrv_addr) as admin:
        # one queue on one broker: the message goes to the queue whose pull is held there
        await admin.update_topic(TOPIC_ONE_QUEUE, broker_addr=broker.address, read_queues=1, write_queues=1)
    order: list[str] = []
    arrived = asyncio.Event()

    async def listener(messages: list[MessageExt]) -> bool:
        order.extend(f"listener {message.body.decode()}" for message in messages)
        arrived.set()
        return True

    consumer = opened(PushConsumer(consumer_config(cluster, group="GH"), listener))
    consumer.subscribe(TOPIC_ONE_QUEUE)
    await competitor.server.start()
    address = f"127.0.0.1:{competitor.server.port}"
    waiting = RemotingClient()
    loop, loop_thread = asyncio.get_running_loop(), threading.get_ident()

    def release_first(topic: str, queue_id: int, max_offset: int, stamp: int, record: object) -> None:
        """The store's first arrival listener: the competitor's answer before the held pull's."""
        if topic != TOPIC_ONE_QUEUE:
            return
        if threading.get_ident() == loop_thread:  # (a put dispatched on the loop)
            competitor.release()
        else:  # the dispatcher thread: the long polling, told next, also calls back on the loop
            loop.call_soon_threadsafe(competitor.release)

    def every_pull_held() -> bool:
        held = 0
        for each in cluster.brokers:
            assert each.context is not None
            held += each.context.long_polling.held_count
        return bool(consumer.assigned_queues) and held == len(consumer.assigned_queues)

    try:
        async with Producer(group="PH", namesrv_addr=cluster.namesrv_addr) as producer:
            await consumer.start()
            await producer.send(Message(TOPIC_ONE_QUEUE, b"warm-up"))  # the producer's route and connection
            await asyncio.wait_for(arrived.wait(), 30)
            await eventually(every_pull_held, what="the consumer's pulls held by the brokers")
            order.clear()

            async def competing() -> None:
                await waiting.invoke(address, make_request(HOLD, opaque=next_opaque()), 10)
                order.append("competitor resumed")

            competing_task = asyncio.create_task(competing())
            await asyncio.wait_for(competitor.holding.wait(), 10)
            # m1's arrival writes the competitor's answer, then the held pull's, in one callback: the
            # client's next turn reads the competitor's answer first (waking its task), then the pull's
            listeners = broker.store.dispatcher.listeners
            listeners.insert(0, release_first)  # (ahead of the broker's long polling)
            try:
                arrived.clear()
                sent = asyncio.create_task(producer.send(Message(TOPIC_ONE_QUEUE, b"m1")))
                await asyncio.wait_for(asyncio.gather(sent, competing_task, arrived.wait()), 30)
            finally:
                listeners.remove(release_first)
    finally:
        await consumer.aclose()
        await waiting.aclose()
        await competitor.server.aclose(grace_s=0.2)
    assert order == ["listener m1", "competitor resumed"]
