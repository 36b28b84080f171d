"""The blocking facades do what their async twins do: a SyncPullConsumer iterates, SyncProducer.send_async
takes a callback, SyncPushConsumer.register_listener; a listener returning None is acknowledged with one
warning; a consumer started while its NameServer is down keeps asking instead of raising."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path

import pytest

from rocketq.client import (
    ClientConfig,
    ConsumeFromWhere,
    ConsumerConfig,
    Message,
    MessageExt,
    Producer,
    PullConsumer,
    PushConsumer,
    SendResult,
    SendStatus,
    SyncProducer,
    SyncPullConsumer,
    SyncPushConsumer,
)
from rocketq.client.admin import AdminClient
from rocketq.testing import LocalCluster, ThreadedCluster, eventually, wait_until

from .helpers import TOPIC, consumer_config, opened, send

PARITY = "Parity"


@pytest.fixture
def threaded(tmp_path: Path) -> Iterator[ThreadedCluster]:
    with ThreadedCluster(tmp_path) as cluster:
        cluster.call(create_topic(cluster.namesrv_addr))
        yield cluster


async def create_topic(namesrv_addr: str) -> None:
    async with AdminClient(namesrv_addr) as admin:
        await admin.update_topic(PARITY, cluster="DefaultCluster", read_queues=2, write_queues=2)


def sync_config(cluster: ThreadedCluster, group: str) -> ConsumerConfig:
    return ConsumerConfig(
        group=group,
        client=ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name=f"p{time.monotonic_ns()}"),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )


def send_sync(cluster: ThreadedCluster, count: int) -> list[bytes]:
    bodies = [f"parity-{i}".encode() for i in range(count)]
    with SyncProducer(group="PP", namesrv_addr=cluster.namesrv_addr) as producer:
        for body in bodies:
            producer.send(Message(PARITY, body))
    return bodies


def test_a_sync_pull_consumer_iterates_until_closed(threaded: ThreadedCluster) -> None:
    sent = send_sync(threaded, 6)
    consumer = SyncPullConsumer(sync_config(threaded, "IterGroup"))
    consumer.subscribe(PARITY)
    consumer.start()
    got: list[bytes] = []
    for message in consumer:
        got.append(message.body)
        if len(got) == len(sent):
            break
    assert sorted(got) == sorted(sent)

    more: list[bytes] = []
    iterating = threading.Thread(target=lambda: more.extend(m.body for m in consumer))
    iterating.start()
    consumer.close()  # the iteration in the other thread ends
    iterating.join(30)
    assert not iterating.is_alive() and more == []


def test_sync_send_async_calls_its_callback(threaded: ThreadedCluster) -> None:
    called: Future[tuple[SendResult | None, BaseException | None]] = Future()
    with SyncProducer(group="PA", namesrv_addr=threaded.namesrv_addr) as producer:
        future = producer.send_async(Message(PARITY, b"a"), lambda result, error: called.set_result((result, error)))
        result = future.result(30)
        assert result.status is SendStatus.SEND_OK
        assert called.result(30) == (result, None)

        failed: Future[tuple[SendResult | None, BaseException | None]] = Future()
        refused = producer.send_async(Message(PARITY, b""), lambda result, error: failed.set_result((result, error)))
        with pytest.raises(ValueError, match="empty"):
            refused.result(30)
        result_seen, error = failed.result(30)
        assert result_seen is None and isinstance(error, ValueError)


def test_sync_push_consumer_takes_a_listener_after_construction(threaded: ThreadedCluster) -> None:
    sent = send_sync(threaded, 4)
    received: list[bytes] = []
    lock = threading.Lock()

    def listener(messages: list[MessageExt]) -> bool:
        with lock:
            received.extend(m.body for m in messages)
        return True

    with SyncPushConsumer(sync_config(threaded, "LateListener")) as consumer:
        consumer.register_listener(listener)
        consumer.subscribe(PARITY)
        consumer.start()
        wait_until(lambda: len(received) >= len(sent), what="the late listener's messages")
    assert sorted(received) == sorted(sent)


async def test_a_listener_returning_none_acknowledges_with_one_warning(
    cluster: LocalCluster, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[bytes] = []

    def listener(messages: list[MessageExt]) -> None:
        calls.extend(m.body for m in messages)

    caplog.set_level(logging.WARNING)
    consumer = opened(PushConsumer(consumer_config(cluster, "NoneGroup"), listener))
    consumer.subscribe(TOPIC)
    await consumer.start()
    sent = await send(cluster, 5)
    await eventually(lambda: consumer.consumed >= len(sent), what="five messages consumed")
    await consumer.aclose()
    assert sorted(calls) == sorted(sent)  # each once: acknowledged, not redelivered
    warnings = [r.getMessage() for r in caplog.records if "returned None" in r.getMessage()]
    assert len(warnings) == 1 and "NoneGroup" in warnings[0]


class Gate:
    """A TCP relay on loopback to ``target`` that hangs up on every connection until it is opened:
    a NameServer that is down, then up again, at the same address."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.is_open = False
        self.refused = 0
        self.address = ""
        self._server: asyncio.Server | None = None
        self._pipes: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Gate:
        self._server = await asyncio.start_server(self._connected, "127.0.0.1", 0)
        self.address = f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._pipes:
            task.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.is_open:
            self.refused += 1
            writer.close()
            return
        host, port = self.target.rsplit(":", 1)
        target_reader, target_writer = await asyncio.open_connection(host, int(port))
        for source, sink in ((reader, target_writer), (target_reader, writer)):
            task = asyncio.create_task(_pipe(source, sink))
            self._pipes.add(task)
            task.add_done_callback(self._pipes.discard)


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    finally:
        sink.close()


async def test_a_consumer_started_while_its_name_server_is_down_keeps_asking(
    cluster: LocalCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with Gate(cluster.namesrv_addr) as gate:
        received: list[bytes] = []
        config = consumer_config(
            cluster,
            "DownAtStart",
            client=ClientConfig(namesrv_addr=gate.address, instance_name="down"),
            rebalance_interval_s=0.2,  # the longest wait between two tries
        )
        consumer = opened(PushConsumer(config, lambda messages: received.extend(m.body for m in messages) or True))
        consumer.subscribe(TOPIC)
        await consumer.start()  # does not raise
        await eventually(lambda: gate.refused >= 4, what="the consumer asking again")
        told = [r.getMessage() for r in caplog.records if "keeps asking" in r.getMessage()]
        assert len(told) == 1 and "no NameServer answered" in told[0]

        gate.is_open = True
        sent = await send(cluster, 4)
        await eventually(lambda: set(received) >= set(sent), what="consuming once the NameServer is back")
        await eventually(lambda: any("answers again" in r.getMessage() for r in caplog.records), what="the all-clear")
        assert len([r for r in caplog.records if "keeps asking" in r.getMessage()]) == 1
        await consumer.aclose()


ORDERED = "ParityOrdered"


def test_blocking_and_asyncio_clients_deliver_the_same_messages_in_the_same_order(threaded: ThreadedCluster) -> None:
    """The same sends through SyncProducer (after the first, made on the caller's thread over its blocking
    connection) and through Producer store the same sequence, with the same bodies, tags, keys, flags and
    properties; SyncPullConsumer and PullConsumer read either back identically (one queue: its order is
    the send order)."""

    async def one_queue_topics() -> None:
        async with AdminClient(threaded.namesrv_addr) as admin:
            for topic in (f"{ORDERED}Sync", f"{ORDERED}Async"):
                await admin.update_topic(topic, cluster="DefaultCluster", read_queues=1, write_queues=1)

    threaded.call(one_queue_topics())
    sent = [(f"order-{i}".encode(), f"tag{i % 3}", f"key-{i}") for i in range(60)]

    def message(topic: str, body: bytes, tag: str, key: str) -> Message:
        return Message(topic, body, tags=tag, keys=key, properties={"n": body.decode()}, flag=len(body))

    with SyncProducer(group="OrderSync", namesrv_addr=threaded.namesrv_addr) as blocking:
        sync_results = [blocking.send(message(f"{ORDERED}Sync", *fields)) for fields in sent]

    async def send_asyncio() -> list[SendResult]:
        async with Producer(group="OrderAsync", namesrv_addr=threaded.namesrv_addr) as producer:
            return [await producer.send(message(f"{ORDERED}Async", *fields)) for fields in sent]

    async_results = threaded.call(send_asyncio())

    def described(results: list[SendResult]) -> list[tuple[SendStatus, int, int, str, int, int]]:
        return [
            (
                r.status,
                r.message_queue.queue_id,
                r.queue_offset,
                r.message_queue.broker_name,
                len(r.msg_id),
                len(r.offset_msg_id),
            )
            for r in results
        ]

    assert described(sync_results) == described(async_results)
    assert [r.queue_offset for r in sync_results] == list(range(len(sent)))
    unique_ids = [r.msg_id for r in sync_results]

    def seen(messages: list[MessageExt]) -> list[tuple[bytes, str, str, str, int, int, set[str]]]:
        return [
            (m.body, m.tags or "", " ".join(m.keys), m.properties["n"], m.flag, m.queue_offset, set(m.properties))
            for m in messages
        ]

    expected = [(body, tag, key, body.decode(), len(body), offset) for offset, (body, tag, key) in enumerate(sent)]
    names: dict[str, list[set[str]]] = {}
    for topic in (f"{ORDERED}Sync", f"{ORDERED}Async"):
        with SyncPullConsumer(sync_config(threaded, f"ReadSync{topic}"), auto_commit=False) as consumer:
            consumer.assign(consumer.fetch_queues(topic))
            consumer.start()
            got: list[MessageExt] = []
            while len(got) < len(sent):
                batch = consumer.poll(30)
                assert batch, f"{topic}: nothing more after {len(got)}"
                got.extend(batch)

        async def read_asyncio(topic: str = topic) -> list[MessageExt]:
            consumer = PullConsumer(sync_config(threaded, f"ReadAsync{topic}"), auto_commit=False)
            try:
                await consumer.assign(await consumer.fetch_queues(topic))
                await consumer.start()
                read: list[MessageExt] = []
                while len(read) < len(sent):
                    batch = await consumer.poll(30)
                    assert batch, f"{topic}: nothing more after {len(read)}"
                    read.extend(batch)
                return read
            finally:
                await consumer.aclose()

        described_read = seen(got)
        assert described_read == seen(threaded.call(read_asyncio())), topic
        assert [fields[:6] for fields in described_read] == expected, topic
        names[topic] = [fields[6] for fields in described_read]
        if topic.endswith("Sync"):
            assert [m.properties["UNIQ_KEY"] for m in got] == unique_ids  # each message's own SendResult id
    assert names[f"{ORDERED}Sync"] == names[f"{ORDERED}Async"]  # the same properties travelled
