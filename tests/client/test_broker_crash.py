"""A consumer group and a broker killed with SIGKILL: after the broker restarts on the same store, the
group resumes from the offsets the broker had persisted and no acknowledged message is lost (messages
consumed after the last persisted commit come again: at least once, as RocketMQ)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

from rocketq.client import Message, Producer, PushConsumer
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageExt
from rocketq.testing import eventually
from rocketq.testing.cluster_process import ClusterProcess

from .helpers import consumer_config

TOPIC = "CrashTopic"
OVERRIDES = {"flush_consumer_offset_interval_ms": 200}  # the broker persists committed offsets this often


async def send(namesrv_addr: str, count: int, prefix: str) -> list[bytes]:
    bodies = [f"{prefix}-{i}".encode() for i in range(count)]
    async with Producer(group="CrashProducer", namesrv_addr=namesrv_addr) as producer:
        for body in bodies:
            await producer.send(Message(TOPIC, body))
    return bodies


def persisted(store: Path) -> int:
    """The sum of CrashGroup's offsets in the broker's consumerOffset.json files under ``store``."""
    total = 0
    for path in store.rglob("consumerOffset.json"):
        try:
            table = json.loads(path.read_text())["offsetTable"]
        except (OSError, ValueError, KeyError):  # being written
            continue
        total += sum(int(offset) for offset in table.get(f"{TOPIC}@CrashGroup", {}).values())
    return total


def slow_member(cluster: ClusterProcess, seen: Counter[bytes]) -> PushConsumer:
    def listener(messages: list[MessageExt]) -> None:
        time.sleep(0.005)  # about 200 messages a second: the kill lands mid-stream
        seen.update(message.body for message in messages)

    config = consumer_config(cluster, "CrashGroup")
    consumer = PushConsumer(config, listener)
    consumer.subscribe(TOPIC)
    return consumer


async def test_a_group_resumes_after_its_broker_is_killed_and_loses_nothing(tmp_path: Path) -> None:
    first_run: Counter[bytes] = Counter()
    second_run: Counter[bytes] = Counter()
    cluster = ClusterProcess(tmp_path, **OVERRIDES).start()
    try:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.update_topic(TOPIC, cluster="DefaultCluster", read_queues=4, write_queues=4)
        before = await send(cluster.namesrv_addr, 400, "before")
        consumer = await slow_member(cluster, first_run).start()
        await eventually(lambda: sum(first_run.values()) >= 150)
        # committed (every 0.2 s) and persisted by the broker (every 0.2 s): what survives the kill
        await eventually(lambda: persisted(tmp_path) >= 150)
        os.kill(cluster.pid, signal.SIGKILL)
    finally:
        cluster.stop()
    # its broker is gone: it finishes what it had cached, its commits fail, and closing does not hang
    await asyncio.wait_for(consumer.aclose(), 30)

    cluster = ClusterProcess(tmp_path, **OVERRIDES).start()  # same store: recovered after the crash
    try:
        consumer = await slow_member(cluster, second_run).start()
        after = await send(cluster.namesrv_addr, 50, "after")
        await eventually(lambda: set(first_run) | set(second_run) >= set(before + after), timeout_s=30)
        await asyncio.sleep(0.3)
        await consumer.aclose()
    finally:
        cluster.stop()
    assert set(first_run) | set(second_run) == set(before + after)  # nothing acknowledged was lost
    assert set(second_run) >= set(after)
    # the second run started from the offsets the broker had persisted before the kill, not from 0:
    # the 150 or more messages below them are not consumed again
    assert len(set(second_run) & set(before)) <= len(before) - 150
