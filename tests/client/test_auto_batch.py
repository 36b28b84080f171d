"""Automatic batching (``ProducerConfig.auto_batch``) against a real cluster of two brokers.

A send whose answer the brokers hold back (``HeldReplies``) keeps its topic busy for as long as a test
needs: every plain send made meanwhile waits for the next batch. The brokers' taps count the requests
and the messages each carried."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.broker.server import Broker
from rocketq.client import (
    BrokerResponseError,
    ClientConfig,
    Message,
    Producer,
    ProducerConfig,
    SendResult,
    SyncProducer,
    TransactionProducer,
    TransactionState,
    ValidationError,
)
from rocketq.client.message import MessageExt
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode, make_response
from rocketq.protocol.batch import decode_batch
from rocketq.remoting import Connection, awaited_answer
from rocketq.testing import LocalCluster, ThreadedCluster
from rocketq.testing.waiting import eventually

from .broker_taps import HeldReplies, tap
from .helpers import TOPIC
from .test_producer import all_messages


class Requests:
    """The send requests the brokers handle: (request code, messages carried), in order."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.seen: list[tuple[int, int]] = []
        for broker in cluster.brokers:
            for code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
                tap(broker, code, self._seen)

    def _seen(self, request: RemotingCommand, response: RemotingCommand | None) -> None:
        count = len(decode_batch(request.body)) if request.code == RequestCode.SEND_BATCH_MESSAGE else 1
        self.seen.append((request.code, count))

    @property
    def batches(self) -> list[int]:
        return [count for code, count in self.seen if code == RequestCode.SEND_BATCH_MESSAGE]


def config(cluster: LocalCluster, **overrides: object) -> ProducerConfig:
    settings: dict[str, object] = {
        "group": "PG",
        "client": ClientConfig(namesrv_addr=cluster.namesrv_addr),
        "send_msg_timeout_s": 30.0,  # the held send waits for its release, however busy the host
    }
    settings.update(overrides)
    return ProducerConfig(**settings)  # type: ignore[arg-type]


@pytest.fixture
async def busy(cluster: LocalCluster) -> AsyncIterator[HeldReplies]:
    """Holds the answer to the first single send the brokers handle until the test ends."""
    held = HeldReplies(count=1)
    for broker in cluster.brokers:
        held.install(broker, RequestCode.SEND_MESSAGE_V2)
    yield held
    held.release()


async def hold_first(producer: Producer, held: HeldReplies, topic: str = TOPIC) -> asyncio.Task[SendResult]:
    """A send to ``topic`` whose answer the brokers hold: the topic stays busy until ``held.release()``."""
    first = asyncio.create_task(producer.send(Message(topic, b"first")))
    await eventually(lambda: held.held, what="the first send's answer held")
    return first


async def test_sends_made_while_one_is_in_flight_leave_as_one_batch(cluster: LocalCluster, busy: HeldReplies) -> None:
    requests = Requests(cluster)
    messages = [
        Message(TOPIC, f"m{i}".encode(), tags=f"T{i % 3}", keys=[f"k{i}", "all"], properties={"n": str(i)}, flag=i)
        for i in range(50)
    ]
    async with Producer(config(cluster)) as producer:
        first = await hold_first(producer, busy)
        results = await asyncio.gather(*[producer.send(message) for message in messages])
        assert requests.batches == [50]  # the 50 made meanwhile, in one request
        busy.release()
        assert (await first).queue_offset >= 0
        stored = {m.body: m for m in await all_messages(cluster, producer, TOPIC)}
    assert len({r.msg_id for r in results}) == 50 and len({r.offset_msg_id for r in results}) == 50
    assert len({r.message_queue for r in results}) == 1  # one queue for the batch
    start = results[0].queue_offset
    assert [r.queue_offset for r in results] == list(range(start, start + 50))  # in the order sent
    for i, (message, result) in enumerate(zip(messages, results, strict=True)):
        seen: MessageExt = stored[message.body]
        assert seen.msg_id == result.msg_id and seen.offset_msg_id == result.offset_msg_id
        assert (seen.queue_id, seen.queue_offset) == (result.message_queue.queue_id, result.queue_offset)
        assert seen.tags == f"T{i % 3}" and seen.keys == [f"k{i}", "all"] and seen.user_properties == {"n": str(i)}
        assert seen.flag == i


async def test_a_lone_send_leaves_at_once_as_a_plain_send(cluster: LocalCluster) -> None:
    requests = Requests(cluster)
    async with Producer(config(cluster)) as producer:
        results = [await producer.send(Message(TOPIC, f"one-{i}".encode())) for i in range(8)]
        async with Producer(config(cluster, group="PG2", auto_batch=False)) as plain:
            together = await asyncio.gather(*[plain.send(Message(TOPIC, f"off-{i}".encode())) for i in range(20)])
    assert requests.seen == [(RequestCode.SEND_MESSAGE_V2, 1)] * 28
    assert len({r.message_queue for r in results}) == 8  # round-robin over the eight queues, as before
    assert len({r.msg_id for r in together}) == 20


async def test_batches_keep_to_the_caps_and_move_round_robin(cluster: LocalCluster, busy: HeldReplies) -> None:
    requests = Requests(cluster)
    async with Producer(config(cluster, batch_max_messages=4, batch_max_bytes=2000)) as producer:
        first = await hold_first(producer, busy)
        results = await asyncio.gather(*[producer.send(Message(TOPIC, f"c{i}".encode())) for i in range(10)])
        large = await asyncio.gather(*[producer.send(Message(TOPIC, bytes([65 + i]) * 900)) for i in range(3)])
        alone = await asyncio.gather(producer.send(Message(TOPIC, b"x" * 2100)), producer.send(Message(TOPIC, b"y")))
        busy.release()
        await first
    # 10 by four at most (three requests side by side); 3 x ~950 bytes within 2000 bytes: 2, then 1 alone
    assert sorted(requests.batches) == [2, 2, 4, 4]
    assert (RequestCode.SEND_MESSAGE_V2, 1) in requests.seen[-4:]  # the 900-byte third, and 2100 bytes: alone
    queues = [results[i].message_queue for i in (0, 4, 8)]
    assert len(set(queues)) == 3  # each batch on its own queue, the next one round-robin
    for group in (results[0:4], results[4:8], results[8:10], large[0:2]):
        assert len({r.message_queue for r in group}) == 1
        assert [r.queue_offset for r in group] == list(range(group[0].queue_offset, group[0].queue_offset + len(group)))
    assert {r.status for r in [*alone, large[2]]} == {results[0].status}


async def test_an_invalid_message_fails_alone(cluster: LocalCluster, busy: HeldReplies) -> None:
    requests = Requests(cluster)
    async with Producer(config(cluster)) as producer:
        first = await hold_first(producer, busy)
        outcomes = await asyncio.gather(
            producer.send(Message(TOPIC, b"good-1")),
            producer.send(Message(TOPIC, b"bad", properties={"a": "x\x01y"})),
            producer.send(Message("no such topic!", b"bad name")),
            producer.send(Message(TOPIC, b"good-2")),
            return_exceptions=True,
        )
        busy.release()
        await first
    assert isinstance(outcomes[1], ValidationError) and isinstance(outcomes[2], ValidationError)
    assert isinstance(outcomes[0], SendResult) and isinstance(outcomes[3], SendResult)
    assert outcomes[3].queue_offset == outcomes[0].queue_offset + 1
    assert requests.batches == [2]


class Refusing:
    """The brokers answer the first ``count`` batch requests with ``code`` instead of storing them."""

    def __init__(self, cluster: LocalCluster, code: int, count: int) -> None:
        self.code = code
        self.left = count
        self.refused = 0
        for broker in cluster.brokers:
            self._install(broker)

    def _install(self, broker: Broker) -> None:
        handlers = broker.handlers
        assert handlers
        handle = handlers[RequestCode.SEND_BATCH_MESSAGE]

        async def refusing(request: RemotingCommand, connection: Connection) -> RemotingCommand | None:
            if self.left > 0:
                self.left -= 1
                self.refused += 1
                return make_response(request, self.code, "refused by the test")
            return await awaited_answer(handle(request, connection))

        handlers[RequestCode.SEND_BATCH_MESSAGE] = refusing


async def test_a_refused_batch_is_retried_for_all_its_sends(cluster: LocalCluster, busy: HeldReplies) -> None:
    refusing = Refusing(cluster, ResponseCode.SYSTEM_BUSY, count=1)
    async with Producer(config(cluster)) as producer:
        first = await hold_first(producer, busy)
        results = await asyncio.gather(*[producer.send(Message(TOPIC, f"r{i}".encode())) for i in range(5)])
        busy.release()
        await first
        stored = await all_messages(cluster, producer, TOPIC)
    assert refusing.refused == 1
    assert len({r.message_queue for r in results}) == 1
    assert sorted(m.body for m in stored if m.body.startswith(b"r")) == [f"r{i}".encode() for i in range(5)]


async def test_a_failed_batch_fails_each_of_its_sends(cluster: LocalCluster, busy: HeldReplies) -> None:
    refusing = Refusing(cluster, ResponseCode.MESSAGE_ILLEGAL, count=100)
    async with Producer(config(cluster)) as producer:
        first = await hold_first(producer, busy)
        outcomes = await asyncio.gather(
            *[producer.send(Message(TOPIC, f"f{i}".encode())) for i in range(5)], return_exceptions=True
        )
        busy.release()
        await first
    assert refusing.refused == 1  # not a code worth another attempt
    assert all(isinstance(o, BrokerResponseError) and o.response_code == ResponseCode.MESSAGE_ILLEGAL for o in outcomes)


async def test_special_sends_never_join_a_batch(cluster: LocalCluster, busy: HeldReplies) -> None:
    requests = Requests(cluster)

    async def commit(message: Message, arg: object) -> TransactionState:
        return TransactionState.COMMIT

    def never(message: MessageExt) -> TransactionState:
        raise AssertionError("checked back")

    async with (
        Producer(config(cluster)) as producer,
        TransactionProducer(config(cluster, group="TG"), local_transaction=commit, check=never) as transactions,
    ):
        first = await hold_first(producer, busy)
        second = await producer.send(Message(TOPIC, b"joins nothing: the only one waiting"))
        results = await asyncio.gather(
            producer.send(Message(TOPIC, b"delayed", delay_level=1)),
            producer.send(Message(TOPIC, b"delivery time", properties={"__STARTDELIVERTIME": "1"})),
            producer.send(Message(TOPIC, b"not waiting for the store", wait_store_msg_ok=False)),
            producer.send(Message(TOPIC, b"idempotent"), idempotent=True),
            producer.send(Message(TOPIC, bytes(range(256)) * 20)),  # compressed, as always
            *[producer.send_orderly(Message(TOPIC, f"o{i}".encode()), sharding_key="k") for i in range(3)],
            *[transactions.send_message_in_transaction(Message(TOPIC, f"t{i}".encode())) for i in range(2)],
        )
        busy.release()
        await first
    assert requests.batches == [] and len(results) == 10
    assert second.msg_id.count(",") == 0  # a lone waiting send leaves as a plain send


def test_the_blocking_producer_batches_through_the_asyncio_one(tmp_path: Path) -> None:
    with ThreadedCluster(tmp_path, brokers=1) as cluster:
        producer = SyncProducer(ProducerConfig(group="PG", client=ClientConfig(namesrv_addr=cluster.namesrv_addr)))
        with producer:
            futures = [producer.send_async(Message("TopicS", f"s{i}".encode())) for i in range(30)]
            results = [future.result(30) for future in futures]
    assert len({r.msg_id for r in results}) == 30
    assert len({(r.message_queue, r.queue_offset) for r in results}) == 30  # each stored once, in its own place


@pytest.mark.parametrize("overrides", [{"batch_max_bytes": 0}, {"batch_max_messages": 0}, {"batch_max_bytes": 10**9}])
def test_batch_caps_are_checked(overrides: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="batch_max"):
        ProducerConfig(**overrides)  # type: ignore[arg-type]
