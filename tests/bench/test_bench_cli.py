"""``rocketq bench store`` end to end on tiny sizes: JSON lines, expected measurements, sane numbers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocketq.bench.metrics import balanced
from rocketq.cli import main

NUMBERS = ("msgs_per_s", "mb_per_s", "p50_us", "p99_us", "seconds")


def run_bench(*args: str) -> list[dict[str, object]]:
    result = CliRunner().invoke(main, ["bench", "store", *args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    return [json.loads(line) for line in lines]


def test_bench_store_json(tmp_path: Path) -> None:
    rows = run_bench(
        "--messages",
        "2000",
        "--size",
        "100",
        "--size",
        "512",
        "--writers",
        "1",
        "--writers",
        "4",
        "--batch",
        "16",
        "--file-size",
        str(256 * 1024),
        "--backlog",
        "2000",
        "--backlog-step",
        "1000",
        "--dir",
        str(tmp_path),
        "--json",
    )
    names = {str(row["name"]) for row in rows}
    assert names == {
        "raw_write",
        "raw_fsync",
        "async_append",
        "async_append_batch",
        "async_append_wire_batch",
        "dispatch",
        "cq_read",
        "dispatch_rebuild",
        "sync_append",
        "sync_append_threads",
        "backlog",
    }
    for row in rows:
        for key in ("name", "size", "messages", "writers", "batch", *NUMBERS):
            assert key in row, (key, row)
        for key in NUMBERS:
            value = row[key]
            assert value is None or (isinstance(value, int | float) and value > 0), (key, row)
        assert isinstance(row["messages"], int) and row["messages"] > 0
    for size in (100, 512):
        at_size = [row for row in rows if row["size"] == size]
        assert {row["name"] for row in at_size} >= names - {"backlog"}
        batch_run = next(row for row in at_size if row["name"] == "async_append_batch")
        assert batch_run["batch"] == 16 and batch_run["messages"] == 2000
        wire_run = next(row for row in at_size if row["name"] == "async_append_wire_batch")
        assert wire_run["messages"] == 2000 and int(wire_run["bytes"]) > int(batch_run["bytes"])  # type: ignore[call-overload]
        assert next(row for row in at_size if row["name"] == "cq_read")["messages"] == 2000
        assert next(row for row in at_size if row["name"] == "dispatch_rebuild")["messages"] == 2000
        for name in ("sync_append", "sync_append_threads"):
            sync = {row["writers"]: row for row in at_size if row["name"] == name}
            assert set(sync) == {1, 4}
            assert float(sync[4]["ratio_vs_1_writer"]) > 0  # type: ignore[arg-type]
            assert 1 <= float(sync[4]["msgs_per_fsync"]) <= 4  # type: ignore[arg-type]
    backlog = [row for row in rows if row["name"] == "backlog"]
    assert [row["total"] for row in backlog] == [1000, 2000]
    assert all(float(row["read_mean_us"]) > 0 for row in backlog)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []  # the scratch directory is removed


def test_bench_store_table(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["bench", "store", "--messages", "500", "--size", "100", "--flush", "async", "--dir", str(tmp_path)],
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "pre-built before timing" in result.stdout
    table = result.stdout.splitlines()
    assert any(line.startswith("async_append_batch") for line in table)
    assert not any(line.startswith("sync_append") for line in table)


def test_bench_filter_json(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["bench", "filter", "--messages", "3000", "--match-percent", "10", "--dir", str(tmp_path), "--json"]
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    rows = {row["name"]: row for row in map(json.loads, result.stdout.splitlines())}
    assert set(rows) == {"filter_dispatch_plain", "filter_dispatch_bitmaps", "filter_pull_sql", "filter_pull_bloom"}
    for name in ("filter_pull_sql", "filter_pull_bloom"):  # both deliver exactly the matches
        assert rows[name]["matched"] == rows[name]["expected"] == 300
    assert all(float(row["msgs_per_s"]) > 0 for row in rows.values())  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []  # the scratch stores are removed


def test_bench_acl_json(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "acl",
            "--messages",
            "300",
            "--rounds",
            "2",
            "--in-flight",
            "8",
            "--no-auto-batch",
            "--dir",
            str(tmp_path),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    # odd rounds run plain first, even rounds ACL first
    assert [(row["name"], row.get("round")) for row in rows] == [
        ("send_plain", 1),
        ("send_acl", 1),
        ("send_acl", 2),
        ("send_plain", 2),
        ("acl_vs_plain", None),
    ]
    summary = rows[-1]
    assert summary["auto_batch"] == 0 and all(row["auto_batch"] == 0 for row in rows)
    assert summary["ratio"] > 0 and summary["cost_pct"] == pytest.approx(100 * (1 - summary["ratio"]), abs=0.01)
    assert all(row["msgs_per_s"] > 0 for row in rows)


def test_bench_metrics_json(tmp_path: Path) -> None:
    args = ["--rounds", "2", "--duration", "0.3", "--inflight", "4", "--drain-backlog", "1500"]
    result = CliRunner().invoke(
        main, ["bench", "metrics", *args, "--scrape-interval", "0.2", "--dir", str(tmp_path), "--json"]
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    # both brokers in every round, off first in odd rounds and on first in even ones; sends, then drains
    assert [(row["name"], row.get("metrics"), row.get("round")) for row in rows[:8]] == [
        ("metrics_send", "off", 1),
        ("metrics_send", "on", 1),
        ("metrics_drain", "off", 1),
        ("metrics_drain", "on", 1),
        ("metrics_send", "on", 2),
        ("metrics_send", "off", 2),
        ("metrics_drain", "on", 2),
        ("metrics_drain", "off", 2),
    ]
    drains = [row for row in rows if row["name"] == "metrics_drain"]
    assert all(row["messages"] == 1500 for row in drains)  # every round's new group reads the same backlog
    assert all(float(row["broker_cpu_us_per_msg"]) > 0 for row in drains)
    scrape = next(row for row in rows if row["name"] == "metrics_scrape")
    # each pair's scraper had an answer before its first round (rounds of 0.3 s once ended before the
    # child scraped at all), whatever the host's load
    assert int(scrape["messages"]) >= 2 and int(scrape["bytes"]) > 0 and int(scrape["failed_scrapes"]) >= 0
    costs = {row["phase"]: row for row in rows if row["name"] == "metrics_cost"}
    assert set(costs) == {"send", "drain"}
    for cost in costs.values():
        assert cost["rounds"] == 2 and float(cost["rate_on_vs_off"]) > 0 and float(cost["broker_cpu_on_vs_off"]) > 0
        # one round per start order: the balanced ratio is the geometric mean of the two rounds' ratios
        first, second = float(cost["rate_on_vs_off_on_started_first"]), float(cost["rate_on_vs_off_on_started_second"])
        assert float(cost["rate_on_vs_off"]) == pytest.approx(
            (first * second) ** 0.5, abs=0.002
        )  # (printed to 3 places)
    assert list(tmp_path.iterdir()) == []  # the scratch stores are removed


def test_metrics_cost_weighs_both_start_orders_alike() -> None:
    # three rounds with the metrics broker started first, one with it second: a plain median would be
    # the first order's; the balanced ratio is the geometric mean of each order's median
    ratios = [1.10, 1.20, 1.30, 0.80]
    result = balanced(ratios, [True, True, True, False])
    assert result["on_first"] == pytest.approx(1.20) and result["on_second"] == pytest.approx(0.80)
    assert result["balanced"] == pytest.approx((1.20 * 0.80) ** 0.5)
    assert balanced([1.05, math.nan], [True, False]) == {"on_first": 1.05, "balanced": pytest.approx(1.05)}
    assert balanced([], []) == {}


def test_bench_metrics_paced_sends_give_both_brokers_the_same_load(tmp_path: Path) -> None:
    args = ["--rounds", "2", "--duration", "0.5", "--send-rate", "200", "--inflight", "4", "--drain-backlog", "300"]
    result = CliRunner().invoke(main, ["bench", "metrics", *args, "--dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    sends = [row for row in rows if row["name"] == "metrics_send"]
    assert sorted(row["metrics"] for row in sends) == ["off", "off", "on", "on"]
    assert all(row["messages"] == 100 for row in sends)  # rate x duration, to each broker in each round
    assert all(float(row["msgs_per_s"]) <= 200 * 1.05 for row in sends)  # paced: never faster than the rate
    assert all(float(row["broker_cpu_us_per_msg"]) > 0 for row in sends)
