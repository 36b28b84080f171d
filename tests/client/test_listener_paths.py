"""A coroutine listener's pulled batch takes one of three paths through ``ConsumeService``: the usual
pull (one listener call's worth of messages, a slot free) is one coroutine that calls the listener and
settles the batch; a batch cut in parts goes over the free slots together; a batch that finds every
slot taken waits for one. Whichever path a batch takes, the consumer must consume as a plain-function
listener on the consume threads does: each queue's messages once, in offset order; the same messages
failed (sent to the dead-letter queue); the same counts of consumed and failed messages; each queue's
offset committed past its last message."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from rocketq.client import Message, Producer, PushConsumer
from rocketq.client.admin import AdminClient
from rocketq.client.admin_consumers import consumer_running_info
from rocketq.client.listener import Reconsume
from rocketq.client.message import MessageExt
from rocketq.testing import LocalCluster, eventually

from .helpers import TOPIC, consumer_config, opened

BACKLOG = 48  # sent before the consumers start: pulls of many messages, cut in parts or waiting for a slot
TRICKLE = 32  # sent one at a time once they consume: the usual pull of one message

Seen = dict[tuple[str, int], list[tuple[int, bytes]]]  # (broker, queue id): (offset, body) in arrival order


def fails(message: MessageExt) -> bool:
    """The messages every listener fails (to the dead-letter queue, so they are not redelivered)."""
    return int(message.body[1:]) % 7 == 3


def verdict(messages: list[MessageExt]) -> bool | Reconsume:
    (message,) = messages
    return Reconsume(delay_level=-1) if fails(message) else True


class Recorder:
    """What one consumer's listener saw, and how many of its calls ran at once at most."""

    def __init__(self) -> None:
        self.seen: Seen = {}
        self.running = 0
        self.most_at_once = 0

    def record(self, messages: list[MessageExt]) -> None:
        for message in messages:
            self.seen.setdefault((message.store_host, message.queue_id), []).append(
                (message.queue_offset, message.body)
            )

    def bodies(self) -> list[bytes]:
        return sorted(body for queue in self.seen.values() for _, body in queue)


def listeners(recorders: dict[str, Recorder]) -> dict[str, tuple[Callable[[list[MessageExt]], Any], int]]:
    """Each consumer's listener and its ``consume_thread_max``."""

    def plain(messages: list[MessageExt]) -> bool | Reconsume:
        recorders["plain"].record(messages)
        return verdict(messages)

    async def never_waits(messages: list[MessageExt]) -> bool | Reconsume:
        recorders["never_waits"].record(messages)
        return verdict(messages)

    async def one_slot(messages: list[MessageExt]) -> bool | Reconsume:
        """Waits on every third message, holding the only slot: batches pulled meanwhile wait for it."""
        recorder = recorders["one_slot"]
        recorder.running += 1
        recorder.most_at_once = max(recorder.most_at_once, recorder.running)
        try:
            if messages[0].queue_offset % 3 == 0:
                await asyncio.sleep(0.001)
            recorder.record(messages)
            return verdict(messages)
        finally:
            recorder.running -= 1

    async def spread(messages: list[MessageExt]) -> bool | Reconsume:
        """Waits on every message: a backlog's batches are cut in parts that run at once."""
        recorder = recorders["spread"]
        recorder.running += 1
        recorder.most_at_once = max(recorder.most_at_once, recorder.running)
        try:
            await asyncio.sleep(0.001)
            recorder.record(messages)
            return verdict(messages)
        finally:
            recorder.running -= 1

    return {"plain": (plain, 20), "never_waits": (never_waits, 20), "one_slot": (one_slot, 1), "spread": (spread, 4)}


async def test_every_path_of_a_coroutine_listeners_batch_consumes_as_the_threads_do(cluster: LocalCluster) -> None:
    recorders = {kind: Recorder() for kind in ("plain", "never_waits", "one_slot", "spread")}
    async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        bodies = [b"m%d" % number for number in range(BACKLOG + TRICKLE)]
        for body in bodies[:BACKLOG]:
            await producer.send(Message(TOPIC, body))
        consumers: dict[str, PushConsumer] = {}
        for kind, (listener, threads) in listeners(recorders).items():
            config = consumer_config(cluster, f"Path{kind}", consume_thread_min=threads, consume_thread_max=threads)
            consumer = consumers[kind] = opened(PushConsumer(config, listener))
            consumer.subscribe(TOPIC)
            await consumer.start()
        await eventually(
            lambda: all(len(recorder.bodies()) >= BACKLOG for recorder in recorders.values()), timeout_s=20
        )
        for body in bodies[BACKLOG:]:  # one at a time: each pulled alone
            await producer.send(Message(TOPIC, body))
            await eventually(lambda b=body: all(b in recorder.bodies() for recorder in recorders.values()))  # type: ignore[misc]
    assert recorders["one_slot"].most_at_once == 1  # the batches that found the slot taken waited
    assert recorders["spread"].most_at_once > 1  # the backlog's batches were cut in parts, run at once
    reference = {queue: sorted(messages) for queue, messages in recorders["plain"].seen.items()}
    assert sorted(body for queue in reference.values() for _, body in queue) == sorted(bodies)
    for kind, recorder in recorders.items():  # the same messages of each queue, each once
        assert {queue: sorted(messages) for queue, messages in recorder.seen.items()} == reference, kind
        for queue, messages in reference.items():
            assert len({offset for offset, _ in messages}) == len(messages), (kind, queue)
    for kind in ("never_waits", "one_slot"):  # one call at a time per queue: in offset order
        assert recorders[kind].seen == reference, kind
    failed = sum(1 for body in bodies if int(body[1:]) % 7 == 3)
    past_the_last = sorted(messages[-1][0] + 1 for messages in reference.values())
    async with AdminClient(cluster.namesrv_addr) as admin:
        for kind, consumer in consumers.items():
            assert consumer.consumed == len(bodies), kind  # acknowledged, or sent to the dead-letter queue
            await eventually(lambda c=consumer: committed(c) == past_the_last)  # type: ignore[misc]
            info = await consumer_running_info(admin, f"Path{kind}", consumer.client_id)
            assert info.status_table[TOPIC].consume_failed_msgs == failed, kind
    for consumer in consumers.values():
        await consumer.aclose()


def committed(consumer: PushConsumer) -> list[int]:
    """The offsets ``consumer`` would commit, of its queues that had messages."""
    offsets = (consumer.consume_offset(queue) for queue in consumer.assigned_queues if queue.topic == TOPIC)
    return sorted(offset for offset in offsets if offset)
