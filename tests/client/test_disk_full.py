"""A full disk loses no acknowledged message: a real broker on a small real disk (a tmpfs), default
ConsumeQueue and index sizes (a 420 MB index file that cannot be made there), with and without SQL92
bloom bit maps in ConsumeQueueExt files. Sends are refused once the disk is full; everything that was
acknowledged before is consumable; sends resume when space comes back, and the index catches up."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from rocketq.client import Message, MessageSelector, MQClientError, Producer, PullConsumer
from rocketq.client.admin import AdminClient
from rocketq.client.config import ProducerConfig
from rocketq.store import FlushDiskType
from rocketq.testing import LocalCluster

from ..disks import fill, mounted_tmpfs, resize_tmpfs
from .helpers import close_opened, consumer_config, opened

TOPIC = "Full"
MIB = 1024 * 1024
DEFAULT_INDEX = {"max_hash_slot_num": 5_000_000, "max_index_num": 20_000_000}  # a 420 MB IndexFile
SQL_EXT = {"enable_property_filter": True, "enable_calc_filter_bit_map": True, "enable_consume_queue_ext": True}


async def send_until_refused(producer: Producer, limit: int) -> tuple[list[bytes], str]:
    """Send 32 KiB messages with keys until one is refused; the acknowledged bodies and the refusal."""
    acknowledged: list[bytes] = []
    for number in range(limit):
        body = f"m{number:05d}".encode() + os.urandom(32 * 1024)
        try:
            await producer.send(Message(TOPIC, body, keys=f"k{number}", properties={"n": str(number)}))
        except MQClientError as exc:
            return acknowledged, str(exc)
        acknowledged.append(body)
    raise AssertionError(f"{limit} sends and the disk is still not full")


async def consume(consumer: PullConsumer, wanted: set[bytes]) -> set[bytes]:
    """Poll until ``wanted`` is consumed, or until 20 polls in a row bring nothing new."""
    got: set[bytes] = set()
    idle = 0
    while not wanted <= got and idle < 20:
        before = len(got)
        got.update(message.body for message in await consumer.poll(0.5))
        idle = 0 if len(got) > before else idle + 1
    return got


async def sent(producer: Producer, body: bytes, key: str) -> bool:
    try:
        await producer.send(Message(TOPIC, body, keys=key))
    except MQClientError:
        return False
    return True


async def until(condition: Callable[[], Awaitable[bool]], what: str, attempts: int = 150) -> None:
    """Await ``condition()`` every 0.1 s until it holds (at most ``attempts`` times)."""
    for _ in range(attempts):
        if await condition():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"waited in vain for {what}")


@pytest.mark.parametrize("variant", ["async-flush", "sync-flush", "sql-ext"])
async def test_a_full_disk_loses_no_acknowledged_message_and_recovers(
    tmp_path: Path, variant: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Sends until the disk is full (SYNC_FLUSH: the broker's grouped puts), every acknowledged message
    consumed, sends again once the disk grows, the keys stored meanwhile found by a query."""
    # 64 MiB as the tester's; 128 MiB with the ext, whose files are 48 MiB: room for one, not for four
    with mounted_tmpfs(tmp_path / "disk", "128m" if variant == "sql-ext" else "64m") as disk:
        overrides: dict[str, object] = {"mapped_file_size_commit_log": 8 * MIB, **DEFAULT_INDEX}
        overrides["mapped_file_size_consume_queue"] = 300_000 * 20
        if variant == "sql-ext":
            overrides.update(SQL_EXT)
        if variant == "sync-flush":
            overrides["flush_disk_type"] = FlushDiskType.SYNC_FLUSH
        async with LocalCluster(disk, brokers=1, **overrides) as cluster:
            try:
                async with AdminClient(cluster.namesrv_addr) as admin:
                    await admin.update_topic(TOPIC, cluster="DefaultCluster", read_queues=4, write_queues=4)
                selector = MessageSelector.by_sql("n >= 0") if variant == "sql-ext" else "*"
                consumer = opened(PullConsumer(consumer_config(cluster, "FULL")))
                consumer.subscribe(TOPIC, selector)
                await consumer.start()  # (registers the SQL subscription before anything is sent)
                config = ProducerConfig(retry_times_when_send_failed=0, compress_msg_body_over_howmuch=1 << 30)
                async with Producer(dataclasses.replace(config, group="P"), namesrv_addr=cluster.namesrv_addr) as p:
                    acknowledged, refusal = await send_until_refused(p, 5000)
                    # refused by the put that found no room, or by the disk check that ran first (which one
                    # comes first depends on when the check runs: a busy machine may change it)
                    assert "disk full" in refusal.lower() or "disk pressure" in refusal.lower(), refusal
                    assert len(acknowledged) > 20
                    got = await consume(consumer, set(acknowledged))
                    assert len(got & set(acknowledged)) == len(acknowledged)

                    resize_tmpfs(disk, "640m")  # space returns: room for the 420 MB index too
                    await until(lambda: sent(p, b"after", "after"), "sends to resume")
                async with AdminClient(cluster.namesrv_addr) as admin:

                    async def first_keys_found() -> bool:
                        found = await admin.query_by_key(TOPIC, "k0") + await admin.query_by_key(TOPIC, "after")
                        return len(found) == 2

                    await until(first_keys_found, "the index to catch up")
            finally:
                await close_opened()
    assert not [record.getMessage() for record in caplog.records if record.exc_info]  # no traceback


PRESSED = "Pressed"


def press(disk: Path, used: float = 0.88) -> None:
    """Fill the disk up to ``used`` of its size (above diskSpaceCleanForciblyRatio, 85 %)."""
    usage = os.statvfs(disk)
    fill(disk, leave=int(usage.f_blocks * usage.f_frsize * (1 - used)))


@pytest.mark.parametrize("opted_in", [False, True], ids=["default", "cleanUnconsumedUnderPressure"])
async def test_disk_pressure_never_deletes_what_a_group_has_not_consumed_unless_told_to(
    tmp_path: Path, opted_in: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """The disk is 88 % full with young files that group G has not consumed. By default retention
    keeps them and the broker refuses sends, naming G; once G has consumed and committed, the files
    go (a WARNING each: before their time) and sends resume. With cleanUnconsumedUnderPressure=true
    they go at once, the WARNING naming G."""
    hour = f"{(time.localtime().tm_hour + 12) % 24:02d}"  # expired files are deleted at an hour that is not now
    with mounted_tmpfs(tmp_path / "disk", "32m") as disk:
        async with LocalCluster(
            disk,
            mapped_file_size_commit_log=MIB,
            delete_when=hour,
            clean_resource_interval=3_600_000,  # retention runs when the test says
            clean_unconsumed_under_pressure=opted_in,
        ) as cluster:
            try:
                async with AdminClient(cluster.namesrv_addr) as admin:
                    await admin.update_topic(PRESSED, cluster="DefaultCluster", read_queues=1, write_queues=1)
                consumer = opened(PullConsumer(consumer_config(cluster, "G"), auto_commit=False))
                consumer.subscribe(PRESSED)
                await consumer.start()
                bodies = {os.urandom(32 * 1024) for _ in range(160)}  # 5 MiB (incompressible): 6 files
                async with Producer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
                    for body in bodies:
                        await producer.send(Message(PRESSED, body))
                    store = cluster.brokers[0].store
                    await cluster.wait_dispatched()
                    files = len(store.commit_log.files.files)
                    press(disk)
                    if opted_in:
                        assert store.retention.run() == files - 1
                        early = [r.getMessage() for r in caplog.records if "before its time" in r.getMessage()]
                        assert len(early) == files - 1 and "group G" in early[0]
                        await producer.send(Message(PRESSED, b"accepted"))
                        return
                    assert store.retention.run() == 0
                    with pytest.raises(MQClientError, match=r"disk pressure.*group G"):
                        await producer.send(Message(PRESSED, b"refused"))
                    assert await consume(consumer, bodies) >= bodies
                    await consumer.commit()
                    assert store.retention.run() == files - 1
                    early = [r for r in caplog.records if "before its time" in r.getMessage()]
                    assert len(early) == files - 1 and {r.levelname for r in early} == {"WARNING"}
                    await producer.send(Message(PRESSED, b"accepted"))
            finally:
                await close_opened()
