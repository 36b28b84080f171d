"""Idempotent sends against real brokers: a send retried after a timeout is stored once (also when its
first attempt reaches the broker late), repeats are answered with the first store's result across a
restart and a SIGKILL, a repeat outside the window (fake clock) is stored again, the memory bound evicts
the oldest (whose repeats the index still answers), and sends not marked idempotent behave as before."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
from collections.abc import Sequence
from pathlib import Path

from rocketq.client import ClientConfig, Message, Producer, ProducerConfig, SendResult
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageQueue
from rocketq.protocol import RequestCode
from rocketq.remoting import awaited_answer
from rocketq.store import FlushDiskType
from rocketq.testing import FakeClock, LocalCluster, eventually
from rocketq.testing.cluster_process import ClusterProcess

from .broker_taps import HeldReplies

TOPIC = "Payments"


def move_to(clock: FakeClock, at: float) -> None:
    assert at >= clock.time(), "a clock does not go back"
    clock.advance(at - clock.time())


def producer_config(namesrv_addr: str, **settings: object) -> ProducerConfig:
    config = ProducerConfig(group="PayProducer", client=ClientConfig(namesrv_addr=namesrv_addr, instance_name="pay"))
    return dataclasses.replace(config, **settings)  # type: ignore[arg-type]


async def create_topic(namesrv_addr: str, queues: int = 2) -> None:
    async with AdminClient(namesrv_addr) as admin:
        await admin.update_topic(TOPIC, cluster="DefaultCluster", read_queues=queues, write_queues=queues)


async def stored(cluster: LocalCluster | ClusterProcess) -> int:
    """How many messages the topic holds, over every broker (all of them dispatched, in process)."""
    if isinstance(cluster, LocalCluster):
        await cluster.wait_dispatched()
    async with AdminClient(cluster.namesrv_addr) as admin:
        return sum(status.max_offset for status in await admin.topic_status(TOPIC))


async def runtime(namesrv_addr: str, address: str) -> dict[str, str]:
    async with AdminClient(namesrv_addr) as admin:
        return await admin.broker_runtime_info(address)


def same_store(a: SendResult, b: SendResult) -> bool:
    return (a.msg_id, a.offset_msg_id, a.message_queue, a.queue_offset) == (
        b.msg_id,
        b.offset_msg_id,
        b.message_queue,
        b.queue_offset,
    )


async def test_a_send_retried_after_a_timeout_is_stored_once(tmp_path: Path) -> None:
    """The first attempt's answer is held back (the broker stored the message), so the producer's attempt
    times out; the retry goes to the same broker, which answers with the first store's result."""
    async with LocalCluster(tmp_path, brokers=2) as cluster:
        await create_topic(cluster.namesrv_addr)
        held = HeldReplies(count=1)
        for broker in cluster.brokers:
            held.install(broker, RequestCode.SEND_MESSAGE_V2)
        config = producer_config(cluster.namesrv_addr, send_msg_timeout_s=30.0, send_attempt_timeout_s=1.0)
        async with Producer(config) as producer:
            result = await producer.send(Message(TOPIC, b"pay 10"), idempotent=True)
        held.release()
        assert len(held.held) == 1 and len(held.requests) >= 2  # the held first attempt, then retries
        first_answer = held.held[0].ext_fields
        assert result.offset_msg_id == first_answer["msgId"]
        assert (result.message_queue.queue_id, result.queue_offset) == (
            int(first_answer["queueId"]),
            int(first_answer["queueOffset"]),
        )
        assert {request.ext_fields["b"] for request in held.requests} == {TOPIC}
        assert await stored(cluster) == 1


async def test_without_idempotence_a_retry_after_a_timeout_is_stored_twice(tmp_path: Path) -> None:
    """The same timeout without the mark: the retry goes to the other broker and both store it (as in
    RocketMQ), under the same client id."""
    async with LocalCluster(tmp_path, brokers=2) as cluster:
        await create_topic(cluster.namesrv_addr)
        held = HeldReplies(count=1)
        for broker in cluster.brokers:
            held.install(broker, RequestCode.SEND_MESSAGE_V2)
        config = producer_config(cluster.namesrv_addr, send_msg_timeout_s=30.0, send_attempt_timeout_s=1.0)
        async with Producer(config) as producer:
            result = await producer.send(Message(TOPIC, b"pay 10"))
        held.release()
        assert await stored(cluster) == 2
        await cluster.wait_dispatched()
        async with AdminClient(cluster.namesrv_addr) as admin:
            copies = await admin.query_by_unique_key(TOPIC, result.msg_id)
        assert len({copy.store_host for copy in copies}) == 2


async def test_a_first_attempt_that_arrives_after_its_retry_is_not_stored_again(tmp_path: Path) -> None:
    """The first attempt is held before the broker handles it (a slow network); its retry is stored, and
    when the first attempt finally arrives it is answered as a repeat."""
    async with LocalCluster(tmp_path, brokers=1) as cluster:
        await create_topic(cluster.namesrv_addr)
        broker = cluster.brokers[0]
        handlers = broker.handlers
        handle = handlers[RequestCode.SEND_MESSAGE_V2]
        released = asyncio.Event()
        answers = []

        async def late_first(request, connection):  # type: ignore[no-untyped-def]
            if not answers:
                answers.append(None)
                await released.wait()
            response = await awaited_answer(handle(request, connection))
            answers.append(response)
            return response

        handlers[RequestCode.SEND_MESSAGE_V2] = late_first
        config = producer_config(cluster.namesrv_addr, send_msg_timeout_s=30.0, send_attempt_timeout_s=1.0)
        async with Producer(config) as producer:
            result = await producer.send(Message(TOPIC, b"late"), idempotent=True)
        released.set()
        await eventually(lambda: len(answers) >= 3)
        late, retry = answers[-1], answers[1]
        assert late is not None and retry is not None
        assert late.ext_fields["msgId"] == retry.ext_fields["msgId"] == result.offset_msg_id
        assert await stored(cluster) == 1


async def test_concurrent_repeats_during_a_sync_flush_store_once(tmp_path: Path) -> None:
    """Five producers send the same message at once to a SYNC_FLUSH broker: repeats that arrive while the
    first waits for its fsync wait for its result."""
    async with LocalCluster(tmp_path, brokers=1, flush_disk_type=FlushDiskType.SYNC_FLUSH) as cluster:
        await create_topic(cluster.namesrv_addr, queues=1)
        message = Message(TOPIC, b"together", properties={"UNIQ_KEY": "0A0000010000000000000000000000AA"})

        async def send(number: int) -> SendResult:
            config = producer_config(cluster.namesrv_addr, idempotent=True)
            config = dataclasses.replace(config, client=dataclasses.replace(config.client, instance_name=f"p{number}"))
            async with Producer(config) as producer:
                return await producer.send(dataclasses.replace(message, properties=dict(message.properties)))

        results = await asyncio.gather(*(send(number) for number in range(5)))
        assert all(same_store(result, results[0]) for result in results)
        assert await stored(cluster) == 1


async def test_repeats_after_a_restart_inside_the_window_are_not_stored(tmp_path: Path) -> None:
    """The broker restarts (memory empty): single, delayed and batch repeats are found in the index and
    answered with the first stores' results."""
    async with LocalCluster(tmp_path, brokers=1) as cluster:
        await create_topic(cluster.namesrv_addr)
        single = Message(TOPIC, b"single")
        delayed = Message(TOPIC, b"delayed", delay_level=3)
        batch = [Message(TOPIC, b"batch-%d" % i) for i in range(3)]
        config = producer_config(cluster.namesrv_addr, idempotent=True)
        async with Producer(config) as producer:
            first = [await producer.send(single), await producer.send(delayed), await producer.send_batch(batch)]
            again = [await producer.send(single), await producer.send(delayed), await producer.send_batch(batch)]
        assert all(same_store(a, b) for a, b in zip(first, again, strict=True))
        assert first[2].msg_id.count(",") == 2 and first[2].offset_msg_id.count(",") == 2
        await cluster.brokers[0].aclose()
        await cluster.start_broker(0)
        async with Producer(config) as producer:
            after = [await producer.send(single), await producer.send(delayed), await producer.send_batch(batch)]
        assert all(same_store(a, b) for a, b in zip(first, after, strict=True))
        info = await runtime(cluster.namesrv_addr, cluster.brokers[0].address)
        assert info["idempotentSendRepeatsFromIndex"] == "3"
        async with AdminClient(cluster.namesrv_addr) as admin:
            statuses = await admin.topic_status(TOPIC)
        assert sum(status.max_offset for status in statuses) == 4  # the single one and the batch of three


async def test_a_repeat_after_a_sigkill_inside_the_window_is_not_stored(tmp_path: Path) -> None:
    """SYNC_FLUSH: an acknowledged idempotent send survives a SIGKILL of its broker, and so does the
    window: recovery re-indexes the CommitLog, where the repeat is recognised."""
    settings = {"flush_disk_type": "SYNC_FLUSH"}
    message = Message(TOPIC, b"durable")
    cluster = ClusterProcess(tmp_path, **settings).start()
    try:
        await create_topic(cluster.namesrv_addr)
        async with Producer(producer_config(cluster.namesrv_addr, idempotent=True)) as producer:
            first = await producer.send(message)
        os.kill(cluster.pid, signal.SIGKILL)
    finally:
        cluster.stop()
    cluster = ClusterProcess(tmp_path, **settings).start()
    try:
        async with Producer(producer_config(cluster.namesrv_addr, idempotent=True)) as producer:
            again = await producer.send(message)
        assert same_store(first, again)
        assert await stored(cluster) == 1
    finally:
        cluster.stop()


async def test_a_repeat_outside_the_window_is_stored_again(tmp_path: Path) -> None:
    clock = FakeClock()
    async with LocalCluster(tmp_path, brokers=1, clock=clock, idempotent_send_window_ms=60_000) as cluster:
        await create_topic(cluster.namesrv_addr)
        message = Message(TOPIC, b"twice, an hour apart")
        async with Producer(producer_config(cluster.namesrv_addr, idempotent=True)) as producer:
            first = await producer.send(message)
            clock.advance(59)
            assert same_store(first, await producer.send(message))
            await cluster.wait_dispatched()
            clock.advance(3600)  # the first store is outside the window, in memory and in the index
            later = await producer.send(message)
            assert later.msg_id == first.msg_id and later.offset_msg_id != first.offset_msg_id
            assert same_store(later, await producer.send(message))  # the new store starts a new window
        assert await stored(cluster) == 2


async def test_the_window_runs_from_the_first_store_also_when_the_index_answers(tmp_path: Path) -> None:
    """A repeat answered from the index is remembered only until the first store's window ends."""
    clock = FakeClock()
    settings = {"idempotent_send_window_ms": 60_000, "idempotent_send_max_entries": 1}
    async with LocalCluster(tmp_path, brokers=1, clock=clock, **settings) as cluster:
        await create_topic(cluster.namesrv_addr)
        old, new = Message(TOPIC, b"old"), Message(TOPIC, b"new")
        async with Producer(producer_config(cluster.namesrv_addr, idempotent=True)) as producer:
            first = await producer.send(old)
            await producer.send(new)  # the bound of 1 evicts the first
            await cluster.wait_dispatched()
            async with AdminClient(cluster.namesrv_addr) as admin:
                stored_at = (await admin.view_message(first.offset_msg_id)).store_timestamp / 1000
            move_to(clock, stored_at + 30)
            assert same_store(first, await producer.send(old))  # from the index, remembered again
            move_to(clock, stored_at + 61)
            assert not same_store(first, await producer.send(old))  # its window ended
        assert await stored(cluster) == 3


async def test_the_bound_evicts_the_oldest_and_the_index_still_answers_its_repeats(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path, brokers=1, idempotent_send_max_entries=2) as cluster:
        await create_topic(cluster.namesrv_addr)
        address = cluster.brokers[0].address
        messages = [Message(TOPIC, b"m%d" % i) for i in range(3)]
        async with Producer(producer_config(cluster.namesrv_addr, idempotent=True)) as producer:
            first = [await producer.send(message) for message in messages]
            info = await runtime(cluster.namesrv_addr, address)
            assert (info["idempotentSendEntries"], info["idempotentSendEvicted"]) == ("2", "1")
            await cluster.wait_dispatched()
            newest = await producer.send(messages[2])
            info = await runtime(cluster.namesrv_addr, address)
            assert (info["idempotentSendRepeatsFromMemory"], info["idempotentSendRepeatsFromIndex"]) == ("1", "0")
            oldest = await producer.send(messages[0])  # evicted: found in the index
            info = await runtime(cluster.namesrv_addr, address)
            assert (info["idempotentSendRepeatsFromMemory"], info["idempotentSendRepeatsFromIndex"]) == ("1", "1")
        assert same_store(oldest, first[0]) and same_store(newest, first[2])
        assert await stored(cluster) == 3


async def test_repeats_not_marked_idempotent_are_stored_each_time(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path, brokers=1) as cluster:
        await create_topic(cluster.namesrv_addr)
        fixed = Message(TOPIC, b"plain", properties={"UNIQ_KEY": "0A0000010000000000000000000000BB"})
        async with Producer(producer_config(cluster.namesrv_addr)) as producer:
            results = [await producer.send(fixed) for _ in range(2)]
            fresh = Message(TOPIC, b"plain")
            ids = {(await producer.send(fresh)).msg_id for _ in range(2)}
        assert {r.msg_id for r in results} == {"0A0000010000000000000000000000BB"}
        assert results[0].offset_msg_id != results[1].offset_msg_id
        assert len(ids) == 2 and "UNIQ_KEY" not in fresh.properties  # no id kept on the message
        assert await stored(cluster) == 4


def _first_queue(queues: Sequence[MessageQueue], message: Message, arg: object) -> MessageQueue:
    return queues[0]


async def test_an_idempotent_send_needs_a_unique_key_and_a_window(tmp_path: Path) -> None:
    """A broker with the window off (0) stores marked repeats like any others."""
    async with LocalCluster(tmp_path, brokers=1, idempotent_send_window_ms=0) as cluster:
        await create_topic(cluster.namesrv_addr)
        message = Message(TOPIC, b"off")
        async with Producer(producer_config(cluster.namesrv_addr, idempotent=True)) as producer:
            one = await producer.send_orderly(message, selector=_first_queue)
            two = await producer.send_orderly(message, selector=_first_queue)
        assert one.msg_id == two.msg_id and one.queue_offset + 1 == two.queue_offset
        assert await stored(cluster) == 2
