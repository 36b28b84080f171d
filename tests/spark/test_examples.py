"""The order-statistics example, run as its README says (in this test session's Spark; its statistics
written to a topic exactly once, after an aggregation: rows that come out of a shuffle)."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import sys
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from rocketq.client import Message, SyncProducer, SyncQueueReader
from rocketq.testing import ThreadedCluster

from .helpers import new_topic

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BASE = dt.datetime(2026, 11, 26, 10, 0, tzinfo=dt.UTC)
REGIONS = ("eu", "us", "asia")


def run_example(name: str, *arguments: str) -> None:
    """``examples/<name>.py`` with these arguments; its ``getOrCreate()`` gets the tests' session."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", [name, *arguments])
        module.main()


def test_order_stats_example(spark: SparkSession, cluster: ThreadedCluster, tmp_path: Path) -> None:
    orders, stats = new_topic(cluster, queues=1, prefix="orders"), new_topic(cluster, queues=1, prefix="stats")
    expected: dict[tuple[str, dt.datetime], list[float]] = defaultdict(lambda: [0, 0.0])
    with SyncProducer(group="orders", namesrv_addr=cluster.namesrv_addr) as producer:
        for n in range(60):  # one order every 7 s: 7 minutes of orders
            at, region = BASE + dt.timedelta(seconds=7 * n), REGIONS[n % 3]
            body = {"orderId": f"o-{n}", "amount": float(n), "eventTime": at.isoformat().replace("+00:00", "Z")}
            producer.send(Message(orders, json.dumps(body).encode(), tags=region, keys=f"o-{n}"))
            window = at.replace(second=0)
            expected[region, window][0] += 1
            expected[region, window][1] += n
    # the last order is at 10:06:53; with a one-minute watermark the windows up to 10:05 are final
    final = {
        key: value
        for key, value in expected.items()
        if key[1] + dt.timedelta(minutes=1) <= BASE + dt.timedelta(minutes=5)
    }
    run_example(
        "order_stats",
        "--name-server", cluster.namesrv_addr,
        "--topic", orders,
        "--stats-topic", stats,
        "--out", str(tmp_path / "out"),
        "--watermark", "1 minute",
        "--available-now",
        "--delivery", "exactlyOnce",
    )  # fmt: skip
    rows = pq.read_table(tmp_path / "out" / "parquet").to_pylist()
    got = {(r["region"], r["windowStart"].replace(tzinfo=dt.UTC)): [r["orders"], r["amount"]] for r in rows}
    assert got == final and len(rows) == len(final) == 15
    with SyncQueueReader(cluster.namesrv_addr) as reader:
        sent = [
            json.loads(m.body)
            for queue in reader.queues(stats)
            for m in reader.messages(queue, 0, reader.max_offset(queue))
        ]
    assert len(sent) == 15 and {(s["region"], s["orders"]) for s in sent} == {(k[0], v[0]) for k, v in final.items()}


def test_store_batch_example(spark: SparkSession, cluster: ThreadedCluster, tmp_path: Path) -> None:
    orders = new_topic(cluster, queues=2, prefix="orders")
    with SyncProducer(group="orders", namesrv_addr=cluster.namesrv_addr) as producer:
        for n in range(40):
            producer.send(Message(orders, b"{}", tags=REGIONS[n % 3]))
    cluster.call(cluster.cluster.wait_dispatched())
    with SyncQueueReader(cluster.namesrv_addr) as reader:
        on_a = sum(reader.max_offset(q) for q in reader.queues(orders) if q.broker_name == "broker-a")
    run_example(
        "store_batch",
        "--store",
        str(cluster.cluster.root / "broker-0"),
        "--topic",
        orders,
        "--out",
        str(tmp_path / "by-hour"),
    )
    rows = pq.read_table(tmp_path / "by-hour").to_pylist()
    assert sum(r["orders"] for r in rows) == on_a > 0 and {r["region"] for r in rows} <= set(REGIONS)
