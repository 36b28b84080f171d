"""The listener kinds get the same messages in the same order: a plain function (consume threads), a
coroutine that never waits (its batches over in their first step, without a Task of their own), one
that waits on some batches (carried on by the Task it ran as) and one that keeps its current task; each
message once, each queue's messages in offset order, and the queues' offsets committed past them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from rocketq.client import PushConsumer
from rocketq.client.message import MessageExt
from rocketq.testing import LocalCluster, eventually

from .helpers import TOPIC, consumer_config, opened, send

Seen = dict[tuple[str, int], list[tuple[int, bytes]]]  # (broker, queue id): (offset, body) in arrival order


def record(seen: Seen, messages: list[MessageExt]) -> None:
    for message in messages:
        queue = (message.store_host, message.queue_id)
        seen.setdefault(queue, []).append((message.queue_offset, message.body))


def listeners(seen: dict[str, Seen], tasks: list[object]) -> dict[str, Callable[[list[MessageExt]], Any]]:
    def plain(messages: list[MessageExt]) -> bool:
        record(seen["plain"], messages)
        return True

    async def never_waits(messages: list[MessageExt]) -> bool:
        assert isinstance(asyncio.current_task(), asyncio.Task)
        record(seen["never_waits"], messages)
        return True

    async def waits_sometimes(messages: list[MessageExt]) -> bool:
        current = asyncio.current_task()
        if messages[0].queue_offset % 3 == 0:
            await asyncio.sleep(0)
            assert asyncio.current_task() is current  # carried on by the Task it started as
        record(seen["waits_sometimes"], messages)
        return True

    async def keeps_its_task(messages: list[MessageExt]) -> bool:
        tasks.append(asyncio.current_task())
        record(seen["keeps_its_task"], messages)
        return True

    return {
        "plain": plain,
        "never_waits": never_waits,
        "waits_sometimes": waits_sometimes,
        "keeps_its_task": keeps_its_task,
    }


async def test_every_listener_kind_gets_each_queues_messages_once_in_order(cluster: LocalCluster) -> None:
    seen: dict[str, Seen] = {kind: {} for kind in ("plain", "never_waits", "waits_sometimes", "keeps_its_task")}
    kept: list[object] = []
    consumers = [
        opened(PushConsumer(consumer_config(cluster, f"Kind{kind}"), listener))
        for kind, listener in listeners(seen, kept).items()
    ]
    for consumer in consumers:
        consumer.subscribe(TOPIC)
        await consumer.start()
    bodies = await send(cluster, 60)

    def consumed(kind: str) -> list[bytes]:
        return sorted(body for queue in seen[kind].values() for _, body in queue)

    await eventually(lambda: all(consumed(kind) == sorted(bodies) for kind in seen), timeout_s=20)
    reference = seen["plain"]
    for kind, queues in seen.items():
        assert queues == reference, kind  # the same messages of each queue, in the same order
        for queue, messages in queues.items():
            offsets = [offset for offset, _ in messages]
            assert offsets == sorted(set(offsets)), (kind, queue)  # once each, in offset order
    assert len(set(map(id, kept))) == len(kept) == 60  # a Task the listener kept is its batch's own
    past_the_last = sorted(messages[-1][0] + 1 for messages in reference.values())
    for consumer in consumers:  # every queue's offset moved past its last message
        await eventually(lambda c=consumer: committed(c) == past_the_last)  # type: ignore[misc]
        await consumer.aclose()


def committed(consumer: PushConsumer) -> list[int]:
    """The offsets ``consumer`` would commit, of its queues that had messages."""
    offsets = (consumer.consume_offset(queue) for queue in consumer.assigned_queues if queue.topic == TOPIC)
    return sorted(offset for offset in offsets if offset)
