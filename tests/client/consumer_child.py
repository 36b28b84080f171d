"""A consumer in a child process, for tests that stop or kill a group member.

usage: consumer_child.py NAMESRV GROUP TOPIC — prints "ready" once it owns queues, then runs until killed.
"""

from __future__ import annotations

import asyncio
import sys

from rocketq.client import ClientConfig, ConsumeFromWhere, ConsumerConfig, PushConsumer


async def main(namesrv: str, group: str, topic: str) -> None:
    config = ConsumerConfig(
        group=group,
        client=ClientConfig(namesrv_addr=namesrv),
        rebalance_interval_s=1.0,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    consumer = PushConsumer(config, lambda messages: None)
    consumer.subscribe(topic)
    await consumer.start()
    while not [q for q in consumer.assigned_queues if q.topic == topic]:
        await asyncio.sleep(0.05)
    print("ready", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
