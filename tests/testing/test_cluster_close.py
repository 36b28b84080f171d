"""Closing a LocalCluster (on a fake clock) ends its stores' background threads: none writes afterwards.

A store's flush thread that outlived its cluster once wrote a checkpoint into a test's directory after
pytest had removed it (a traceback after the summary). These tests close clusters, after a clean run
and after a broker that failed to start, and check that no store or exporter thread is left and that
the files stay as they were while many flush intervals go by.
"""

from __future__ import annotations

import hashlib
import socket
import threading
from pathlib import Path

import pytest

from rocketq.client import Message, Producer
from rocketq.client.admin import AdminClient
from rocketq.store import MessageStore, StoreConfig
from rocketq.testing import FakeClock, LocalCluster

BACKGROUND = (
    "rocketq-logics-flush",
    "rocketq-commitlog-flush",
    "rocketq-dispatch",
    "rocketq-clean",
    "metrics-exporter",
)
FLUSH_MS = 5  # the ConsumeQueue/checkpoint and CommitLog flush intervals: a thread left behind writes at once
SETTINGS = {
    "store_settings": {"flush_interval_consume_queue_ms": FLUSH_MS, "flush_interval_commit_log_ms": FLUSH_MS},
    "metrics_exporter_type": "PROM",
    "metrics_prom_exporter_port": 0,
}


def background_threads(before: set[threading.Thread]) -> list[str]:
    """The store and exporter threads started since ``before`` was taken that are still alive (a
    session-scoped cluster of other tests, such as the Spark tests', keeps its own running)."""
    return sorted(thread.name for thread in threading.enumerate() if thread.name in BACKGROUND and thread not in before)


def files_of(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file under ``root``: its size, modification time and a hash of its bytes."""
    return {
        str(path.relative_to(root)): (path.stat().st_size, path.stat().st_mtime_ns, hash_of(path))
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def hash_of(path: Path) -> bytes:
    return hashlib.blake2b(path.read_bytes(), digest_size=16).digest()


def unchanged_while_flush_intervals_pass(root: Path) -> None:
    """The files stay the same while 40 flush intervals pass (a flush thread left would write in each)."""
    before = files_of(root)
    threading.Event().wait(40 * FLUSH_MS / 1000)
    assert files_of(root) == before


@pytest.fixture
def before() -> set[threading.Thread]:
    """The threads alive before the test: theirs are not the test's."""
    return set(threading.enumerate())


async def test_closing_a_cluster_ends_its_stores_threads(tmp_path: Path, before: set[threading.Thread]) -> None:
    clock = FakeClock()
    cluster = await LocalCluster(tmp_path, clock=clock, **SETTINGS).start()
    async with AdminClient(cluster.namesrv_addr) as admin:
        await admin.update_topic("Closing", cluster="DefaultCluster", read_queues=1, write_queues=1)
    async with Producer(group="closing", namesrv_addr=cluster.namesrv_addr) as producer:
        await producer.send(Message("Closing", b"before the close"))
    clock.advance(3600)
    assert set(background_threads(before)) == set(BACKGROUND)  # what the checks below would catch
    await cluster.aclose()
    assert background_threads(before) == []
    unchanged_while_flush_intervals_pass(tmp_path)
    await cluster.aclose()  # closing again does nothing
    assert background_threads(before) == []


async def test_a_broker_that_fails_to_start_leaves_no_thread_and_its_store_closed(
    tmp_path: Path, before: set[threading.Thread]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cluster = LocalCluster(tmp_path, clock=FakeClock(), listen_port=port, **SETTINGS)
        with pytest.raises(OSError):  # its store started, then its port could not be had
            await cluster.start()
    assert background_threads(before) == []
    unchanged_while_flush_intervals_pass(tmp_path)
    sizes = {"mapped_file_size_consume_queue": 20 * 10_000, "max_hash_slot_num": 10_000, "max_index_num": 40_000}
    config = StoreConfig(store_path_root_dir=tmp_path / "broker-0", mapped_file_size_commit_log=16 << 20, **sizes)
    assert not config.abort_path.exists()  # closed cleanly: its lock is free and it opens at once
    with MessageStore(config) as store:
        assert store.recovery is not None and store.recovery.damage == []
