"""Sentinels: to check that nothing else arrives, send one message to every queue of the topic after the
messages that must not arrive (or must arrive once), and wait for the sentinels instead of sleeping. A
queue is consumed in order, so a message stored before its queue's sentinel is pulled before it: once
every sentinel is in, whatever else was coming has come. A slow machine changes nothing but how long
the wait takes."""

from __future__ import annotations

from collections.abc import Sequence

from rocketq.client import Message, Producer
from rocketq.client.message import MessageQueue

from .helpers import Cluster


async def send_sentinels(
    cluster: Cluster, topic: str, prefix: str = "sentinel", tags: str | None = None
) -> list[bytes]:
    """One message on each writable queue of ``topic``; their bodies."""
    bodies: list[bytes] = []
    async with Producer(group="SENTINEL_PG", namesrv_addr=cluster.namesrv_addr) as producer:
        for queue in await producer.fetch_publish_queues(topic):
            body = f"{prefix}-{queue.broker_name}-{queue.queue_id}".encode()
            await producer.send_orderly(Message(topic, body, tags=tags), selector=_this_queue, arg=queue)
            bodies.append(body)
    return bodies


def _this_queue(queues: Sequence[MessageQueue], message: Message, queue: MessageQueue) -> MessageQueue:
    return queue
