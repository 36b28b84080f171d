"""Compatibility with the official RocketMQ C++ client (PyPI ``rocketmq==0.4.4``, ``librocketmq.so``),
run in child processes against an in-process rocketq cluster."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rocketq.client import (
    ClientConfig,
    ConsumeFromWhere,
    ConsumerConfig,
    Message,
    MessageModel,
    Producer,
    PushConsumer,
)
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageExt
from rocketq.protocol import RemotingCommand, RequestCode
from rocketq.protocol.batch import decode_batch
from rocketq.protocol.bodies import MessageQueue
from rocketq.store import FlushDiskType
from rocketq.testing import LocalCluster, eventually
from rocketq.testing.cluster import wait_replicated

from ..client.broker_taps import HeldReplies, tap

DRIVER = Path(__file__).with_name("cpp_driver.py")


def cpp_client_problem() -> str | None:
    probe = subprocess.run([sys.executable, "-c", "import rocketmq.client"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"the rocketmq==0.4.4 C++ client cannot load here: {probe.stderr[-300:]}"


pytestmark = pytest.mark.skipif(cpp_client_problem() is not None, reason=str(cpp_client_problem()))


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(tmp_path, brokers=1) as running:
        yield running


async def run_driver(
    home: Path, *args: str, timeout: float = 60, env: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Run the driver; the C++ client writes its logs under $HOME, so HOME is a temporary folder.
    ``env``: more environment (CPP_ACCESS_KEY and CPP_SECRET_KEY: credentials, see cpp_driver.py)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(DRIVER),
        *args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "HOME": str(home), **(env or {})},
    )
    events: list[dict[str, Any]] = []
    assert process.stdout is not None
    try:
        async with asyncio.timeout(timeout):
            async for line in process.stdout:
                text = line.decode().strip()
                if not text.startswith("{"):
                    continue
                event = json.loads(text)
                events.append(event)
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0, (await process.stderr.read()).decode()[-2000:] if process.stderr else ""
    return events


async def test_cpp_producer_and_consumer_with_rocketq(cluster: LocalCluster, tmp_path: Path) -> None:
    topic = "CppTopic"
    sent = await run_driver(tmp_path, cluster.namesrv_addr, "produce", topic)
    kinds = [e["kind"] for e in sent if e["event"] == "sent"]
    assert kinds == ["sync", "oneway", "orderly", "orderly", "orderly", "big"]
    assert all(e.get("status", 1) == 1 for e in sent if e["event"] == "sent")

    async with Producer(group="PY_PG", namesrv_addr=cluster.namesrv_addr) as producer:
        await producer.send(
            Message(topic, b"from-rocketq", tags="TagPy", keys="py-key", properties={"origin": "rocketq"})
        )

    received = await run_driver(tmp_path, cluster.namesrv_addr, "consume", topic, "CPP_CG", "7", "40")
    messages = {e["body"]: e for e in received if e["event"] == "received"}
    assert set(messages) == {
        "cpp-sync",
        "cpp-oneway",
        "cpp-orderly-0",
        "cpp-orderly-1",
        "cpp-orderly-2",
        "x" * 5000,
        "from-rocketq",
    }
    sync = messages["cpp-sync"]
    assert (sync["tags"], sync["keys"], sync["origin"]) == ("TagA", "cpp-key-1 cpp-key-2", "cpp")
    assert messages["cpp-oneway"]["tags"] == "TagB"
    assert messages["x" * 5000]["tags"] == "Big"
    ours = messages["from-rocketq"]
    assert (ours["tags"], ours["keys"], ours["origin"]) == ("TagPy", "py-key", "rocketq")
    orderly = sorted((messages[f"cpp-orderly-{i}"] for i in range(3)), key=lambda e: e["queue_offset"])
    assert [e["body"] for e in orderly] == ["cpp-orderly-0", "cpp-orderly-1", "cpp-orderly-2"]
    assert len({e["queue_id"] for e in orderly}) == 1
    sent_ids = {e["msg_id"] for e in sent if e.get("msg_id")}
    assert sync["msg_id"] in sent_ids
    broker = cluster.brokers[0]
    assert sum(broker.offsets.offsets_of("CPP_CG", topic).values()) == 7  # the consumer committed its progress


async def test_cpp_consumer_reads_automatically_batched_sends(cluster: LocalCluster, tmp_path: Path) -> None:
    """Sends that ``Producer`` batched by itself (ProducerConfig.auto_batch) reach the C++ consumer as
    the messages sent: each with its own tags, keys, properties, id and queue offset."""
    topic = "CppAutoBatch"
    broker = cluster.brokers[0]
    held = HeldReplies(count=1).install(broker, RequestCode.SEND_MESSAGE_V2)  # keeps the topic busy
    batches: list[int] = []

    def seen(request: RemotingCommand, response: RemotingCommand | None) -> None:
        batches.append(len(decode_batch(request.body)))

    tap(broker, RequestCode.SEND_BATCH_MESSAGE, seen)
    async with Producer(group="PY_PG", namesrv_addr=cluster.namesrv_addr) as producer:
        first = asyncio.create_task(producer.send(Message(topic, b"auto-first", properties={"origin": "rocketq"})))
        await eventually(lambda: held.held, what="the first send's answer held")
        results = await asyncio.gather(
            *[
                producer.send(
                    Message(topic, f"auto-{n}".encode(), tags="TagAB", keys=f"ab-{n}", properties={"origin": "rocketq"})
                )
                for n in range(10)
            ]
        )
        held.release()
        await first
    assert batches == [10]
    received = await run_driver(tmp_path, cluster.namesrv_addr, "consume", topic, "CPP_AB", "11", "40")
    messages = {e["body"]: e for e in received if e["event"] == "received"}
    assert set(messages) == {"auto-first", *(f"auto-{n}" for n in range(10))}
    for n, result in enumerate(results):
        event = messages[f"auto-{n}"]
        assert (event["tags"], event["keys"], event["origin"]) == ("TagAB", f"ab-{n}", "rocketq")
        assert (event["msg_id"], event["queue_id"], event["queue_offset"]) == (
            result.msg_id,
            result.message_queue.queue_id,
            result.queue_offset,
        )


async def test_cpp_and_rocketq_consumers_share_a_group(tmp_path: Path) -> None:
    fast_levels = " ".join(f"{100 * (i + 1)}ms" for i in range(18))
    async with LocalCluster(tmp_path / "cluster", brokers=1, message_delay_level=fast_levels) as cluster:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.update_topic("MixTopic", cluster="DefaultCluster", read_queues=8, write_queues=8)
            # the group has run before, so its retry topic exists: the C++ client reads routes only at
            # start and every 30 s, and would otherwise not see the retry queue within this test
            await admin.update_topic("%RETRY%MIX", cluster="DefaultCluster", read_queues=1, write_queues=1)
        ours: list[MessageExt] = []
        config = ConsumerConfig(
            group="MIX",
            client=ClientConfig(namesrv_addr=cluster.namesrv_addr),
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        )
        consumer = PushConsumer(config, lambda messages: ours.extend(messages))
        consumer.subscribe("MixTopic")
        await consumer.start()
        try:
            cpp = asyncio.create_task(
                run_driver(tmp_path, cluster.namesrv_addr, "consume", "MixTopic", "MIX", "100000", "14")
            )
            for _ in range(100):  # wait until the C++ member joined and both rebalanced
                await asyncio.sleep(0.1)
                if len([q for q in consumer.assigned_queues if q.topic == "MixTopic"]) == 4:
                    break
            assert len([q for q in consumer.assigned_queues if q.topic == "MixTopic"]) == 4
            await asyncio.sleep(1.0)  # the C++ client starts pulling its half
            async with Producer(group="PY_PG", namesrv_addr=cluster.namesrv_addr) as producer:
                for i in range(40):
                    await producer.send(Message("MixTopic", f"mix-{i}".encode()))
                for queue_id in range(8):  # one message on every queue that C++ fails the first time
                    await producer.send_orderly(
                        Message("MixTopic", f"fail-once-{queue_id}".encode()),
                        selector=lambda queues, message, arg: queues[arg],
                        arg=queue_id,
                    )
            events = await cpp
            theirs = [e for e in events if e["event"] == "received"]
            failed_by_cpp = {
                e["body"] for e in theirs if e["body"].startswith("fail-once") and e["reconsume_times"] == 0
            }

            def came_back() -> set[str]:
                """Failed messages delivered again through the retry topic, to either member."""
                again = {e["body"] for e in theirs if e["reconsume_times"] >= 1}
                return again | {m.body.decode() for m in ours if m.reconsume_times >= 1}

            # If the C++ member owned the retry queue and left first, the rocketq member takes it over.
            deadline = time.monotonic() + 10
            while not failed_by_cpp <= came_back() and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
        finally:
            await consumer.aclose()
    our_bodies = {m.body.decode() for m in ours}
    their_bodies = {e["body"] for e in theirs}
    plain = {f"mix-{i}" for i in range(40)}
    assert our_bodies & plain and their_bodies & plain  # both members consumed part of the stream
    assert plain <= our_bodies | their_bodies  # and together all of it
    assert failed_by_cpp  # the C++ member owned some queues with a failing message
    assert failed_by_cpp <= came_back()  # RECONSUME_LATER from C++ went through the retry topic and came back


async def test_cpp_consumer_follows_a_reset_offset_by_time(cluster: LocalCluster, tmp_path: Path) -> None:
    """resetOffsetByTime with the official C++ consumer online: the broker's RESET_CONSUMER_CLIENT_OFFSET
    body (the list form Java sends to C++ clients) moves it back, and it consumes everything again."""
    topic, group, count = "ResetTopic", "CPP_RESET", 8
    async with AdminClient(cluster.namesrv_addr) as admin:
        await admin.update_topic(topic, cluster="DefaultCluster", read_queues=4, write_queues=4)
    async with Producer(group="PY_PG", namesrv_addr=cluster.namesrv_addr) as producer:
        for i in range(count):
            await producer.send(Message(topic, f"reset-{i}".encode()))
    cpp = asyncio.create_task(run_driver(tmp_path, cluster.namesrv_addr, "consume", topic, group, str(2 * count), "45"))
    broker = cluster.brokers[0]
    deadline = time.monotonic() + 20  # the C++ client commits its offsets every 5 s
    while sum(broker.offsets.offsets_of(group, topic).values()) < count and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert sum(broker.offsets.offsets_of(group, topic).values()) == count  # consumed once, committed
    async with AdminClient(cluster.namesrv_addr) as admin:
        reset = await admin.reset_offset_by_time(group, topic, 0)
    assert [entry.offset for entry in reset] == [0, 0, 0, 0]
    events = await cpp
    bodies = sorted(e["body"] for e in events if e["event"] == "received")
    assert bodies == sorted([f"reset-{i}" for i in range(count)] * 2)  # every message exactly twice


@pytest.mark.parametrize("flush", [FlushDiskType.ASYNC_FLUSH, FlushDiskType.SYNC_FLUSH])
async def test_cpp_batch_delayed_and_ordered_sends(tmp_path: Path, flush: FlushDiskType) -> None:
    """The C++ producer's SEND_BATCH_MESSAGE body (written from the wire), a delay level it sets, and
    sharding-key order, as a rocketq consumer sees them; with SYNC_FLUSH its sends that wait for the
    fsync are grouped per loop iteration (``GroupedPuts``)."""
    levels = " ".join(f"{i + 1}s" for i in range(18))  # level 2 = 2 s
    async with LocalCluster(
        tmp_path / "cluster", brokers=1, message_delay_level=levels, flush_disk_type=flush
    ) as cluster:
        topic = "CppMore"
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.update_topic(topic, cluster="DefaultCluster", read_queues=4, write_queues=4)
        ours: list[tuple[float, MessageExt]] = []
        config = ConsumerConfig(
            group="PY_MORE",
            client=ClientConfig(namesrv_addr=cluster.namesrv_addr),
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        )
        consumer = PushConsumer(config, lambda messages: ours.extend((time.time(), m) for m in messages))
        consumer.subscribe(topic)
        await consumer.start()
        try:
            sent = await run_driver(tmp_path, cluster.namesrv_addr, "produce_more", topic)
            assert all(e["status"] == 1 for e in sent if e["event"] == "sent")
            deadline = time.monotonic() + 15
            while len(ours) < 16 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        finally:
            await consumer.aclose()
    by_body = {m.body.decode(): (at, m) for at, m in ours}
    assert len(ours) == 16 and len(by_body) == 16
    for i in range(3):  # the three messages of the C++ batch, with their own keys and tags
        _, item = by_body[f"cpp-batch-{i}"]
        assert (item.tags, item.keys) == ("Batch", [f"batch-key-{i}"])
    delayed_sent = next(e["at"] for e in sent if e.get("kind") == "delayed")
    delayed_at, delayed = by_body["cpp-delayed"]
    assert delayed.topic == topic and delayed.tags == "Delayed"
    assert 1.9 <= delayed_at - delayed_sent < 5.0  # level 2: held for 2 s, then delivered at once
    for key in range(3):  # one queue per key, and the queue keeps the send order
        items = sorted((m for _, m in ours if m.body.startswith(f"key{key}-".encode())), key=lambda m: m.queue_offset)
        assert len({m.queue_id for m in items}) == 1
        assert [m.body.decode() for m in items] == [f"key{key}-{n}" for n in range(4)]


async def test_cpp_orderly_consumer_locks_queues_and_keeps_order(cluster: LocalCluster, tmp_path: Path) -> None:
    """The C++ orderly PushConsumer locks its queues on the rocketq broker (LOCK_BATCH_MQ) and consumes
    each key in send order, also across a message it fails once (retried locally, queue suspended)."""
    topic, group = "CppOrder", "CPP_ORDER"
    async with AdminClient(cluster.namesrv_addr) as admin:
        await admin.update_topic(topic, cluster="DefaultCluster", read_queues=4, write_queues=4)
    async with Producer(group="PY_PG", namesrv_addr=cluster.namesrv_addr) as producer:
        for n in range(8):
            for key in range(3):
                body = f"fail-once-key{key}-{n}" if n == 3 else f"key{key}-{n}"
                await producer.send_orderly(Message(topic, body.encode()), sharding_key=f"key{key}")
    cpp = asyncio.create_task(
        run_driver(tmp_path, cluster.namesrv_addr, "consume", topic, group, "27", "40", "orderly")
    )
    broker = cluster.brokers[0]
    assert broker.context is not None
    locks, broker_name = broker.context.locks, broker.context.config.broker_name
    holders: set[str] = set()
    deadline = time.monotonic() + 20
    while not cpp.done() and time.monotonic() < deadline:
        now_ms = int(time.monotonic() * 1000)  # the lock table's clock
        for queue_id in range(4):
            holder = locks.holder(group, MessageQueue(topic=topic, broker_name=broker_name, queue_id=queue_id), now_ms)
            if holder is not None:
                holders.add(holder)
        await asyncio.sleep(0.05)
    events = await cpp
    assert len(holders) == 1  # the C++ client held the queues it consumed
    received = [e["body"] for e in events if e["event"] == "received"]
    for key in range(3):
        seen = [body for body in received if f"key{key}-" in body]
        expected = [f"key{key}-{n}" for n in range(3)]
        expected += [f"fail-once-key{key}-3", f"fail-once-key{key}-3"]  # failed once, then consumed
        expected += [f"key{key}-{n}" for n in range(4, 8)]
        assert seen == expected


async def test_cpp_and_rocketq_broadcasting_consumers_each_get_everything(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    topic, group = "CppBroadcast", "CPP_BROADCAST"
    async with AdminClient(cluster.namesrv_addr) as admin:
        await admin.update_topic(topic, cluster="DefaultCluster", read_queues=4, write_queues=4)
    ours: list[MessageExt] = []
    config = ConsumerConfig(
        group=group,
        client=ClientConfig(namesrv_addr=cluster.namesrv_addr),
        message_model=MessageModel.BROADCASTING,
        offset_store_dir=tmp_path / "offsets",
    )
    consumer = PushConsumer(config, lambda messages: ours.extend(messages))
    consumer.subscribe(topic)
    await consumer.start()
    try:
        cpp = asyncio.create_task(
            run_driver(tmp_path, cluster.namesrv_addr, "consume", topic, group, "10", "30", "broadcasting")
        )
        broker = cluster.brokers[0]
        assert broker.context is not None
        context = broker.context
        deadline = time.monotonic() + 20  # both members registered, and both pulling all 4 queues
        while time.monotonic() < deadline and not (
            len(context.clients.consumer_ids(group)) == 2 and context.long_polling.held_count >= 8
        ):
            await asyncio.sleep(0.05)
        assert len(context.clients.consumer_ids(group)) == 2
        async with Producer(group="PY_PG", namesrv_addr=cluster.namesrv_addr) as producer:
            for n in range(10):
                await producer.send(Message(topic, f"all-{n}".encode()))
        events = await cpp
        deadline = time.monotonic() + 10
        while len(ours) < 10 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    finally:
        await consumer.aclose()
    expected = sorted(f"all-{n}" for n in range(10))
    assert sorted(e["body"] for e in events if e["event"] == "received") == expected
    assert sorted(m.body.decode() for m in ours) == expected


async def test_cpp_pull_consumer_with_a_tag_expression(cluster: LocalCluster, tmp_path: Path) -> None:
    topic = "CppPull"
    async with AdminClient(cluster.namesrv_addr) as admin:
        await admin.update_topic(topic, cluster="DefaultCluster", read_queues=4, write_queues=4)
    async with Producer(group="PY_PG", namesrv_addr=cluster.namesrv_addr) as producer:
        for n in range(12):
            await producer.send(Message(topic, f"pull-{n}".encode(), tags="TagA" if n % 3 else "TagB"))
    holds_before = [broker.context.long_polling.holds for broker in cluster.brokers if broker.context]
    events = await run_driver(tmp_path, cluster.namesrv_addr, "pull", topic, "CPP_PULL", "TagB")
    holds = [broker.context.long_polling.holds for broker in cluster.brokers if broker.context]
    assert holds == holds_before  # the last pull of each queue is answered, not held
    received = [e for e in events if e["event"] == "received"]
    assert sorted(e["body"] for e in received) == sorted(f"pull-{n}" for n in range(0, 12, 3))
    assert {e["tags"] for e in received} == {"TagB"}


async def test_the_cpp_consumer_reads_from_a_slave_when_told_to_and_after_the_master_stops(tmp_path: Path) -> None:
    topic, count = "CppSlaveReads", 320  # 40 a queue: more than one pull (32) each, the later ones told to the slave
    async with LocalCluster(tmp_path / "cluster", brokers=1, slave_read_enable=True) as cluster:
        master = cluster.brokers[0]
        slave = await cluster.start_slave(0)
        async with Producer(group="PY_PG", namesrv_addr=cluster.namesrv_addr) as producer:
            for i in range(count):
                await producer.send(Message(topic, f"s-{i}".encode()))
        await eventually(lambda: slave.topics.get(topic) is not None, 15, what="the slave's copy of the topic")
        await wait_replicated(master.store.commit_log.max_offset, slave)
        home = tmp_path / "home"
        home.mkdir()
        events = await run_driver(home, cluster.namesrv_addr, "consume", topic, "CPP_SLAVE", str(count), "50")
        assert len({e["body"] for e in events if e["event"] == "received"}) == count
        assert slave.consume_rates.totals.get(("CPP_SLAVE", topic), 0) >= count - 8 * 32

        await master.aclose()  # the master is gone: a new group reads everything from the slave
        events = await run_driver(home, cluster.namesrv_addr, "consume", topic, "CPP_LATE", str(count), "60")
        assert len({e["body"] for e in events if e["event"] == "received"}) == count
        assert slave.consume_rates.totals.get(("CPP_LATE", topic), 0) >= count
