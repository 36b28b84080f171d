"""The blocking consumer facades against a cluster on its own loop thread (ThreadedCluster)."""

from __future__ import annotations

import dataclasses
import threading
import time
from concurrent.futures import Future
from pathlib import Path

from rocketq.client import (
    ClientConfig,
    ConsumeFromWhere,
    ConsumerConfig,
    Message,
    MessageQueue,
    SyncProducer,
    SyncPullConsumer,
    SyncPushConsumer,
)
from rocketq.client.admin import AdminClient
from rocketq.client.errors import MQClientError
from rocketq.client.message import MessageExt
from rocketq.testing import FakeClock, ThreadedCluster, wait_until

FIRST, SECOND = "SyncFirst", "SyncSecond"
QUIET = 60.0  # no periodic task of the consumer's wakes its loop meanwhile (rebalancing, commits)
BLOCKED = 600.0  # a poll's timeout that no test waits out: the poll must return for another reason


async def create_topics(namesrv_addr: str) -> None:
    async with AdminClient(namesrv_addr) as admin:
        for topic in (FIRST, SECOND):
            await admin.update_topic(topic, cluster="DefaultCluster", read_queues=2, write_queues=2)


async def subscribed_topics(namesrv_addr: str, group: str) -> set[str]:
    """The group's topics as the brokers know them from its heartbeats."""
    async with AdminClient(namesrv_addr) as admin:
        return set((await admin.consumer_connection(group)).subscription_table)


async def member_ids(namesrv_addr: str, group: str) -> list[str]:
    async with AdminClient(namesrv_addr) as admin:
        return [member.client_id for member in (await admin.consumer_connection(group)).connection_set]


def config(cluster: ThreadedCluster, group: str) -> ConsumerConfig:
    return ConsumerConfig(
        group=group,
        client=ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name=f"s{time.monotonic_ns()}"),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        rebalance_interval_s=QUIET,
        persist_consumer_offset_interval_s=QUIET,
    )


def send(cluster: ThreadedCluster, topic: str, count: int) -> list[bytes]:
    bodies = [f"{topic}-{i}".encode() for i in range(count)]
    with SyncProducer(group="SP", namesrv_addr=cluster.namesrv_addr) as producer:
        for body in bodies:
            producer.send(Message(topic, body))
    return bodies


def poll_all(consumer: SyncPullConsumer, count: int, timeout: float) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        got.extend(m.body for m in consumer.poll(0.2))
    return got


def poll_messages(consumer: SyncPullConsumer, count: int, timeout: float) -> list[MessageExt]:
    got: list[MessageExt] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        got.extend(consumer.poll(0.2))
    return got


def test_sync_pull_consumer_subscribe_poll_commit_close(tmp_path: Path) -> None:
    with ThreadedCluster(tmp_path) as cluster:
        cluster.call(create_topics(cluster.namesrv_addr))
        first = send(cluster, FIRST, 20)
        with SyncPullConsumer(config(cluster, "SyncPull"), auto_commit=False) as consumer:
            consumer.subscribe(FIRST)
            consumer.start()
            assert sorted(poll_all(consumer, 20, 10)) == sorted(first)
            assert cluster.call(member_ids(cluster.namesrv_addr, "SyncPull")) == [consumer.client_id]
            assert consumer.poll(0.2) == []
            queues = sorted(q for q in consumer.assignment if q.topic == FIRST)
            assert len(queues) == 2 and [consumer.committed(q) for q in queues] == [0, 0]
            consumer.commit()
            assert sum(consumer.committed(q) for q in queues) == 20

            consumer.subscribe(SECOND)  # after start: assigned and pulled without waiting for a rebalance
            second = send(cluster, SECOND, 10)
            assert sorted(poll_all(consumer, 10, 2.0)) == sorted(second)
        with SyncPullConsumer(config(cluster, "SyncPull")) as restarted:  # resumes after the commit
            restarted.subscribe(FIRST)
            restarted.start()
            assert restarted.poll(1.0) == []


def test_sync_push_consumer_takes_a_topic_subscribed_after_start_at_once(tmp_path: Path) -> None:
    with ThreadedCluster(tmp_path) as cluster:
        cluster.call(create_topics(cluster.namesrv_addr))
        received: list[bytes] = []
        lock = threading.Lock()

        def listener(messages: list[MessageExt]) -> None:
            with lock:
                received.extend(m.body for m in messages)

        with SyncPushConsumer(config(cluster, "SyncPush"), listener) as consumer:
            consumer.subscribe(FIRST)
            consumer.start()
            first = send(cluster, FIRST, 10)
            wait_until(lambda: sorted(received) == sorted(first), 10)
            time.sleep(0.5)  # the consumer's loop is idle: its pulls are held by the broker

            consumer.subscribe(SECOND)
            second = send(cluster, SECOND, 10)
            wait_until(lambda: len(received) >= 20)
            assert sorted(received) == sorted(first + second)
            # and the brokers were told at once, as Java's subscribe() after start sends a heartbeat
            assert SECOND in cluster.call(subscribed_topics(cluster.namesrv_addr, "SyncPush"))
            assert {q.topic for q in consumer.assigned_queues} == {FIRST, SECOND, "%RETRY%SyncPush"}
            members = cluster.call(member_ids(cluster.namesrv_addr, "SyncPush"))
            assert members == [consumer.client_id] and consumer.consumed == 20
        consumer.subscribe(FIRST)  # after close(): answered here, not on the stopped loop
        assert {q.topic for q in consumer.assigned_queues} <= {FIRST, SECOND, "%RETRY%SyncPush"}


def test_sync_pull_consumer_polls_prefetched_batches_on_its_own_thread_in_order(tmp_path: Path) -> None:
    """Batches already prefetched are taken on the polling thread (no hop to the loop): every message
    once, each queue's in offset order; the positions reach the offset store, so close() commits them
    and a restarted member finds nothing; a seek still drops what was prefetched before it."""
    with ThreadedCluster(tmp_path) as cluster:
        cluster.call(create_topics(cluster.namesrv_addr))
        sent = send(cluster, FIRST, 120)
        small = dataclasses.replace(config(cluster, "SyncPullOwnThread"), pull_batch_size=4)
        with SyncPullConsumer(small) as consumer:  # many small batches wait in the buffers meanwhile
            consumer.subscribe(FIRST)
            consumer.start()
            got = poll_messages(consumer, len(sent), 20)
            assert sorted(m.body for m in got) == sorted(sent)
            for queue in {(m.topic, m.queue_id) for m in got}:
                offsets = [m.queue_offset for m in got if (m.topic, m.queue_id) == queue]
                assert offsets == list(range(len(offsets)))  # in order, no gap, no repeat

            queue = min(q for q in consumer.assignment if q.topic == FIRST)
            consumer.seek_to_begin(queue)
            again = [m.queue_offset for m in poll_messages(consumer, 1_000, 1.0) if m.queue_id == queue.queue_id]
            assert again == sorted(m.queue_offset for m in got if m.queue_id == queue.queue_id)
        with SyncPullConsumer(config(cluster, "SyncPullOwnThread")) as restarted:
            restarted.subscribe(FIRST)
            restarted.start()
            assert restarted.poll(1.0) == []
            assert sum(restarted.committed(q) for q in restarted.assignment) == len(sent)


def test_a_waiting_sync_poll_is_woken_by_a_batch_and_by_close(tmp_path: Path) -> None:
    """A poll waiting on its own thread with nothing buffered returns the batch the prefetchers buffer
    (it does not wait out its timeout), and close() from another thread ends a waiting poll: it raises,
    the consumer is closed."""
    with ThreadedCluster(tmp_path) as cluster:
        cluster.call(create_topics(cluster.namesrv_addr))
        consumer = SyncPullConsumer(config(cluster, "SyncPullWake"))
        ended: Future[BaseException | None] = Future()
        try:
            consumer.subscribe(FIRST)
            consumer.start()
            assert consumer.poll(0.2) == []  # assigned, nothing buffered
            woken: Future[list[bytes]] = Future()
            waiting = threading.Thread(target=lambda: woken.set_result([m.body for m in consumer.poll(BLOCKED)]))
            waiting.start()
            sent = send(cluster, FIRST, 1)
            assert woken.result(30) == sent

            def poll_until_closed() -> None:
                try:
                    ended.set_result(None if consumer.poll(BLOCKED) == [] else AssertionError("a batch"))
                except MQClientError as error:
                    ended.set_result(error)

            threading.Thread(target=poll_until_closed, daemon=True).start()
            time.sleep(0.2)  # (lets it start waiting; the assertion below holds either way)
        finally:
            consumer.close()
        error = ended.result(30)
        assert isinstance(error, MQClientError) and "closed" in str(error)


def test_a_sync_poll_returns_what_is_buffered_without_waiting_and_nothing_at_its_timeout(tmp_path: Path) -> None:
    """``poll(0)`` cannot wait: it returns a batch only when one is already buffered, and every message
    comes through such polls. On an empty queue a poll returns [] once its timeout has passed."""
    with ThreadedCluster(tmp_path) as cluster:
        cluster.call(create_topics(cluster.namesrv_addr))
        with SyncPullConsumer(config(cluster, "SyncPullNoWait")) as consumer:
            consumer.subscribe(FIRST)
            consumer.start()
            assert consumer.poll(0) == []  # nothing sent yet
            sent = send(cluster, FIRST, 12)
            got: list[bytes] = []

            def took_all() -> bool:
                got.extend(m.body for m in consumer.poll(0))
                return len(got) >= len(sent)

            wait_until(took_all)
            assert sorted(got) == sorted(sent)
            ended: Future[list[MessageExt]] = Future()
            threading.Thread(target=lambda: ended.set_result(consumer.poll(0.05)), daemon=True).start()
            assert ended.result(30) == []  # (30 s: only against a hang; the poll's own timeout ended it)


def test_a_batch_wakes_one_of_two_waiting_sync_polls_and_close_ends_the_other(tmp_path: Path) -> None:
    """Two threads wait in ``poll`` with nothing buffered: the one batch sent goes to exactly one of them,
    the other keeps waiting (its timeout is far off) until ``close()`` ends it."""
    with ThreadedCluster(tmp_path) as cluster:
        cluster.call(create_topics(cluster.namesrv_addr))
        consumer = SyncPullConsumer(config(cluster, "SyncPullTwoWaiting"))
        outcomes: list[Future[object]] = [Future(), Future()]

        def poll_into(outcome: Future[object]) -> None:
            try:
                outcome.set_result([m.body for m in consumer.poll(BLOCKED)])
            except MQClientError as error:
                outcome.set_result(error)

        try:
            consumer.subscribe(FIRST)
            consumer.start()
            assert consumer.poll(0.2) == []
            for outcome in outcomes:
                threading.Thread(target=poll_into, args=(outcome,), daemon=True).start()
            sent = send(cluster, FIRST, 1)
            wait_until(lambda: any(outcome.done() for outcome in outcomes), 30)
            first = next(outcome for outcome in outcomes if outcome.done())
            assert first.result() == sent
        finally:
            consumer.close()
        other = next(outcome for outcome in outcomes if outcome is not first).result(30)
        assert isinstance(other, MQClientError) and "closed" in str(other)


def test_positions_polled_on_the_callers_thread_are_committed_by_the_periodic_persist(tmp_path: Path) -> None:
    """With ``auto_commit`` the position after what ``poll`` returned on the caller's thread is committed
    when the consumer's clock reaches the persist interval (the group's persist, subscribed; the
    consumer's own, assigned), not only at ``close()``."""
    clock = FakeClock()
    with ThreadedCluster(tmp_path) as cluster:
        cluster.call(create_topics(cluster.namesrv_addr))
        sent = send(cluster, FIRST, 20) + send(cluster, SECOND, 20)
        for group, topic in (("SyncPullPersistSubscribed", FIRST), ("SyncPullPersistAssigned", SECOND)):
            client = ClientConfig(namesrv_addr=cluster.namesrv_addr, instance_name=group, clock=clock)
            with SyncPullConsumer(dataclasses.replace(config(cluster, group), client=client)) as consumer:
                if topic == FIRST:
                    consumer.subscribe(topic)
                else:
                    consumer.assign(consumer.fetch_queues(topic))
                consumer.start()
                got = poll_all(consumer, 20, 10)
                assert sorted(got) == sorted(body for body in sent if body.startswith(topic.encode()))
                queues = sorted(q for q in consumer.assignment if q.topic == topic)
                assert sum(consumer.committed(q) for q in queues) <= 0  # nothing persisted yet

                def persisted(consumer: SyncPullConsumer = consumer, queues: list[MessageQueue] = queues) -> bool:
                    clock.advance(QUIET)  # (each time: the persist may not have been waiting yet)
                    return sum(consumer.committed(q) for q in queues) == 20

                wait_until(persisted, 30, what=f"the positions of {group} committed")


def test_a_waiting_sync_poll_gets_a_full_pull_that_no_other_follows(tmp_path: Path) -> None:
    """While pulls come back full the waiting thread is woken per hand-over's worth of them, not per
    pull; a full pull that no other follows (the queue has nothing after it) still reaches the waiting
    poll, after a short wait on the loop's timer, not at the poll's far-off timeout."""
    with ThreadedCluster(tmp_path) as cluster:
        cluster.call(create_topics(cluster.namesrv_addr))
        with SyncProducer(group="SP", namesrv_addr=cluster.namesrv_addr) as producer:
            queue = producer.fetch_publish_queues(FIRST)[0]
            sent = [f"full-{i}".encode() for i in range(4)]
            producer.send_batch([Message(FIRST, body) for body in sent], queue=queue)
        small = dataclasses.replace(config(cluster, "SyncPullFull"), pull_batch_size=len(sent))
        with SyncPullConsumer(small) as consumer:
            consumer.assign([queue])
            consumer.start()
            assert poll_all(consumer, len(sent), 10) == sent
            woken: Future[list[bytes]] = Future()
            threading.Thread(target=lambda: woken.set_result([m.body for m in consumer.poll(BLOCKED)])).start()
            time.sleep(0.2)  # (lets it start waiting; the assertion below holds either way)
            consumer.seek(queue, 0)  # the next pull brings the 4 again: one full pull, then nothing
            assert woken.result(30) == sent
