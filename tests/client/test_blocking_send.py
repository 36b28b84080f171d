"""SyncProducer.send makes its first attempt on the caller's thread, over a blocking connection of its own
to the broker, once the topic's route is known; everything else goes to the producer's loop as before.
Real brokers on a ThreadedCluster: sends skip the loop's connection, a broker closed mid-run is failed
over, an answer that comes too late is never taken for the next send's, ACL signatures are made, and
threads sending at once each get their own results."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.broker.server import Broker
from rocketq.client import (
    ClientConfig,
    ConsumeFromWhere,
    ConsumerConfig,
    Message,
    MQClientError,
    ProducerConfig,
    SendResult,
    SendStatus,
    SyncProducer,
    SyncPullConsumer,
)
from rocketq.client.admin import AdminClient
from rocketq.client.errors import MQConnectionError
from rocketq.protocol import RemotingCommand, RequestCode
from rocketq.remoting import Connection, awaited_answer
from rocketq.testing import ThreadedCluster, wait_until

from .broker_taps import HeldReplies

SPREAD = "BlockingSpread"  # two queues on every broker
SINGLE = "BlockingSingle"  # one queue on every broker: offsets follow the send order


def create_topics(cluster: ThreadedCluster, access_key: str = "", secret_key: str = "") -> None:
    async def create() -> None:
        async with AdminClient(cluster.namesrv_addr, access_key=access_key, secret_key=secret_key) as admin:
            await admin.update_topic(SPREAD, cluster="DefaultCluster", read_queues=2, write_queues=2)
            await admin.update_topic(SINGLE, cluster="DefaultCluster", read_queues=1, write_queues=1)

    cluster.call(create())


@pytest.fixture
def one_broker(tmp_path: Path) -> Iterator[ThreadedCluster]:
    with ThreadedCluster(tmp_path, brokers=1) as cluster:
        create_topics(cluster)
        yield cluster


@pytest.fixture
def two_brokers(tmp_path: Path) -> Iterator[ThreadedCluster]:
    with ThreadedCluster(tmp_path, brokers=2) as cluster:
        create_topics(cluster)
        yield cluster


def producer(cluster: ThreadedCluster, access_key: str = "", secret_key: str = "") -> SyncProducer:
    client = ClientConfig(namesrv_addr=cluster.namesrv_addr, access_key=access_key, secret_key=secret_key)
    return SyncProducer(ProducerConfig(group="BlockingGroup", client=client))


def send_connections(broker: Broker) -> list[str]:
    """The client end (host:port) of the connection every send to ``broker`` from now on comes on."""
    handlers = broker.handlers
    assert handlers
    handle = handlers[RequestCode.SEND_MESSAGE_V2]
    seen: list[str] = []

    async def watched(request: RemotingCommand, connection: Connection) -> RemotingCommand | None:
        seen.append(connection.remote_address)
        return await awaited_answer(handle(request, connection))

    handlers[RequestCode.SEND_MESSAGE_V2] = watched
    return seen


def stored(cluster: ThreadedCluster, broker: Broker, topic: str) -> int:
    """How many messages ``broker`` holds in ``topic``'s queues."""

    async def count() -> int:
        return sum(broker.store.get_max_offset_in_queue(topic, queue) for queue in range(2))

    return cluster.call(count())


def test_sends_after_the_first_go_over_a_blocking_connection_of_their_own(one_broker: ThreadedCluster) -> None:
    connections = send_connections(one_broker.cluster.brokers[0])
    with producer(one_broker) as sender:
        results = [sender.send(Message(SINGLE, f"m{i}".encode())) for i in range(5)]
    assert [r.queue_offset for r in results] == list(range(5))
    assert all(r.status is SendStatus.SEND_OK for r in results)
    # the first send looks the route up on the loop, and goes on its connection; the others do not
    assert len(set(connections[1:])) == 1 and connections[0] not in connections[1:]


def test_a_broker_closed_mid_run_is_failed_over(two_brokers: ThreadedCluster) -> None:
    first, second = two_brokers.cluster.brokers
    with producer(two_brokers) as sender:
        before = [sender.send(Message(SPREAD, f"before-{i}".encode())) for i in range(12)]
        assert {r.message_queue.broker_name for r in before} == {"broker-a", "broker-b"}
        stored_before = stored(two_brokers, second, SPREAD)
        two_brokers.call(first.aclose())
        after = [sender.send(Message(SPREAD, f"after-{i}".encode())) for i in range(12)]
    assert all(r.status is SendStatus.SEND_OK for r in after)
    assert {r.message_queue.broker_name for r in after} == {"broker-b"}
    assert stored(two_brokers, second, SPREAD) == stored_before + len(after)


def test_an_answer_that_comes_too_late_is_not_taken_for_the_next_sends(one_broker: ThreadedCluster) -> None:
    broker = one_broker.cluster.brokers[0]
    with producer(one_broker) as sender:
        assert sender.send(Message(SINGLE, b"warm-up")).queue_offset == 0

        answered: list[int] = []  # the opaques of the answers the broker has written

        async def hold() -> HeldReplies:
            held = HeldReplies(1).install(broker, RequestCode.SEND_MESSAGE_V2)
            holding = broker.handlers[RequestCode.SEND_MESSAGE_V2]

            async def answering(request: RemotingCommand, connection: Connection) -> RemotingCommand | None:
                response = await awaited_answer(holding(request, connection))
                answered.append(request.opaque)  # (the server writes it in this same step)
                return response

            broker.handlers[RequestCode.SEND_MESSAGE_V2] = answering
            return held

        held = one_broker.call(hold())
        with pytest.raises(MQConnectionError, match="timed out"):
            sender.send(Message(SINGLE, b"late"), timeout=0.5)
        wait_until(lambda: held.held, what="the broker stored the late message")

        async def release() -> None:
            held.release()

        one_broker.call(release())
        wait_until(lambda: answered, what="the late answer")
        one_broker.call(asyncio.sleep(0))  # the step that wrote it has ended: it has left, late
        following = [sender.send(Message(SINGLE, f"next-{i}".encode())) for i in range(3)]
    assert [r.queue_offset for r in following] == [2, 3, 4]
    late_id = held.held[0].ext_fields["msgId"]
    assert late_id not in {r.offset_msg_id for r in following}


ACL = """
accounts:
  - accessKey: operator
    secretKey: operator-secret
    admin: true
  - accessKey: shop-app
    secretKey: shop-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: DENY
    topicPerms: [BlockingSpread=PUB|SUB, BlockingSingle=PUB|SUB]
"""


def test_blocking_sends_are_signed_and_a_wrong_secret_is_refused(tmp_path: Path) -> None:
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(ACL)
    with ThreadedCluster(tmp_path / "cluster", brokers=1, acl_enable=True, acl_file=acl_file) as cluster:
        create_topics(cluster, "operator", "operator-secret")
        broker = cluster.cluster.brokers[0]
        assert broker.acl is not None
        with producer(cluster, "shop-app", "shop-secret") as shop:
            results = [shop.send(Message(SINGLE, f"signed-{i}".encode())) for i in range(5)]
        assert [r.queue_offset for r in results] == list(range(5))
        assert broker.acl.refused == 0
        with producer(cluster, "shop-app", "not-the-secret") as wrong:
            for _ in range(3):  # the first looks its route up on the loop; the others are blocking sends
                with pytest.raises(MQClientError, match=r"NO_PERMISSION .*does not match AccessKey 'shop-app'"):
                    wrong.send(Message(SINGLE, b"sneaky"))
        assert stored(cluster, broker, SINGLE) == 5  # nothing more was stored


def test_threads_sending_at_once_each_get_their_own_results(one_broker: ThreadedCluster) -> None:
    threads, each = 4, 40
    results: list[list[SendResult]] = [[] for _ in range(threads)]
    failures: list[BaseException] = []
    with producer(one_broker) as sender:
        sender.send(Message(SPREAD, b"route"))  # (so every thread may take the blocking path)

        def run(index: int) -> None:
            try:
                for i in range(each):
                    results[index].append(sender.send(Message(SPREAD, f"t{index}-{i}".encode(), keys=f"t{index}")))
            except BaseException as exc:  # raised below
                failures.append(exc)

        workers = [threading.Thread(target=run, args=(index,)) for index in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert not failures
    flat = [result for own in results for result in own]
    assert len(flat) == threads * each
    assert len({r.msg_id for r in flat}) == len(flat)
    assert len({(r.message_queue, r.queue_offset) for r in flat}) == len(flat)  # each stored once, in its own place

    config = ConsumerConfig(
        group="BlockingReader",
        client=ClientConfig(namesrv_addr=one_broker.namesrv_addr),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )
    with SyncPullConsumer(config, auto_commit=False) as consumer:
        consumer.assign(consumer.fetch_queues(SPREAD))
        consumer.start()
        read: dict[str, bytes] = {}
        while len(read) < len(flat) + 1:
            batch = consumer.poll(30)
            assert batch, f"nothing more after {len(read)}"
            read.update((m.properties["UNIQ_KEY"], m.body) for m in batch)
    for index, own in enumerate(results):
        assert [read[r.msg_id] for r in own] == [f"t{index}-{i}".encode() for i in range(each)]
