"""A lone put's keys are indexed after its dispatch pass, not in it (``IndexService.build(later=True)``):
queries, flushes and later builds take them first, so a query by key right after a put's dispatch finds
it, the order of the index is the CommitLog's, and a clean restart finds every key. The dispatcher
thread sleeps for an hour here: nothing is indexed behind the test's back."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.common.message import encode_properties
from rocketq.store import MessageStore, MessageToStore
from rocketq.store.index_service import DEFERRED_WAKE_RECORDS
from rocketq.testing import wait_until

from .conftest import small_config

KEYS = ["a", "b", "c", "d"]
PUTS = st.lists(
    st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(["TopicA", "TopicB"])), min_size=1, max_size=4),
    min_size=1,
    max_size=30,
)
"""Puts of one message (their keys kept for later) and batches (indexed at once, after what waits)."""


def open_store(root: Path) -> MessageStore:
    return MessageStore(small_config(root, dispatch_interval_ms=3_600_000)).start()


def found(store: MessageStore, topic: str, key: str) -> list[bytes]:
    return [record.body for record in store.query_message(topic, key, max_num=1000, unique=False)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(puts=PUTS)
def test_a_key_is_found_right_after_its_put_is_dispatched(puts: list[list[tuple[str, str]]]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        expected: dict[tuple[str, str], list[bytes]] = {}
        store = open_store(root)
        try:
            for number, batch in enumerate(puts):
                messages = [
                    MessageToStore(
                        topic=topic,
                        queue_id=0,
                        body=b"%d-%d" % (number, i),
                        properties=encode_properties({"KEYS": key}),
                    )
                    for i, (key, topic) in enumerate(batch)
                ]
                assert store.put_messages(messages, dispatch=False).ok
                store.dispatch_pending(1 << 20)  # on this thread, as the broker's event loop does
                for message, (key, topic) in zip(messages, batch, strict=True):
                    expected.setdefault((topic, key), []).insert(0, message.body)
                # the newest put's keys are queryable at once, and every key's entries come newest first
                topic, key = batch[-1][1], batch[-1][0]
                assert found(store, topic, key) == expected[(topic, key)]
            for (topic, key), bodies in expected.items():
                assert found(store, topic, key) == bodies
            last_topic, last_key = puts[-1][-1][1], puts[-1][-1][0]
            last = store.put_messages(
                [
                    MessageToStore(
                        topic=last_topic, queue_id=0, body=b"last", properties=encode_properties({"KEYS": last_key})
                    )
                ],
                dispatch=False,
            )
            assert last.ok
            store.dispatch_pending(1 << 20)  # its keys wait: the close below must write them
            expected[(last_topic, last_key)].insert(0, b"last")
        finally:
            store.close()
        reopened = open_store(root)
        try:
            for (topic, key), bodies in expected.items():
                assert found(reopened, topic, key) == bodies
        finally:
            reopened.close()


def test_the_thread_builds_waiting_keys_once_enough_wait_and_not_before(tmp_path: Path) -> None:
    """The dispatcher's thread is not woken per put (nor every few ms: its idle round is an hour away
    here, and so are the flushes, which would take the keys too): lone puts' keys wait until
    ``DEFERRED_WAKE_RECORDS`` of them do, and then the put's dispatch wakes the thread, which builds
    them without any query asking."""
    config = small_config(
        tmp_path, dispatch_interval_ms=3_600_000, flush_interval_consume_queue_ms=3_600_000, max_index_num=4096
    )
    store = MessageStore(config).start()
    try:
        index = store.index
        assert index is not None

        def put(number: int) -> int:
            result = store.put_messages(
                [
                    MessageToStore(
                        topic="TopicA",
                        queue_id=0,
                        body=b"%d" % number,
                        properties=encode_properties({"KEYS": f"k{number}"}),
                    )
                ],
                dispatch=False,
            )
            assert result.ok
            store.dispatch_pending(1 << 20)  # on this thread, as the broker's event loop does
            return result.physical_offsets[0]

        for number in range(DEFERRED_WAKE_RECORDS - 1):
            put(number)
        assert index.deferred_count == DEFERRED_WAKE_RECORDS - 1  # nothing woke the thread
        assert index.end_phy_offset == -1
        last_offset = put(DEFERRED_WAKE_RECORDS - 1)
        wait_until(lambda: index.deferred_count == 0 and index.end_phy_offset == last_offset, timeout_s=30)
        assert [record.body for record in store.query_message("TopicA", "k0", max_num=10)] == [b"0"]
    finally:
        store.close()
