"""AdminClient.query_by_time: a topic's messages stored in a time range, from every queue of every broker."""

from __future__ import annotations

import asyncio
import time

import pytest

from rocketq.client import Message, Producer
from rocketq.client.admin import AdminClient
from rocketq.client.errors import ValidationError
from rocketq.testing import LocalCluster

from .helpers import TOPIC


async def _send_batch(cluster: LocalCluster, admin: AdminClient, prefix: str, count: int) -> dict[bytes, int]:
    """Send ``count`` messages; body -> its store time (ms)."""
    async with Producer(group="TimeP", namesrv_addr=cluster.namesrv_addr) as producer:
        sent = [await producer.send(Message(TOPIC, f"{prefix}{i}".encode())) for i in range(count)]
    stored = [await admin.view_message(result.offset_msg_id) for result in sent]
    return {m.body: m.store_timestamp for m in stored}


async def _after(ms: int) -> None:
    """Wait until the wall clock is past ``ms`` (so later sends are stored later)."""
    while time.time() * 1000 <= ms + 1:
        await asyncio.sleep(0.005)


async def test_messages_of_a_time_range_from_every_queue(cluster: LocalCluster) -> None:
    async with AdminClient(cluster.namesrv_addr) as admin:
        first = await _send_batch(cluster, admin, "a", 12)
        await _after(max(first.values()))
        second = await _send_batch(cluster, admin, "b", 12)
        await cluster.wait_dispatched()

        found = await admin.query_by_time(TOPIC, min(first.values()), max(first.values()))
        assert sorted(m.body for m in found) == sorted(first)
        assert len({(m.store_host, m.queue_id) for m in found}) > 1  # several queues, both brokers' turns
        assert [m.store_timestamp for m in found] == sorted(m.store_timestamp for m in found)  # oldest first

        everything = await admin.query_by_time(TOPIC, min(first.values()), max(second.values()))
        assert sorted(m.body for m in everything) == sorted([*first, *second])
        newest = await admin.query_by_time(TOPIC, 0, max(second.values()) + 1000, max_num=len(second))
        assert sorted(m.body for m in newest) == sorted(second)  # the most recent of the range

        assert await admin.query_by_time(TOPIC, 0, min(first.values()) - 1) == []
        with pytest.raises(ValidationError, match="ends"):
            await admin.query_by_time(TOPIC, 10, 5)
        with pytest.raises(ValidationError, match="max_num"):
            await admin.query_by_time(TOPIC, 0, 5, max_num=0)
