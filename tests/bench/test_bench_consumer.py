"""``rocketq bench consumer`` end to end on tiny numbers: JSON lines, expected measurements, sane numbers."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import rocketq
from rocketq.cli import main
from rocketq.client.admin import AdminClient
from rocketq.testing import ThreadedCluster

NUMBERS = ("msgs_per_s", "mb_per_s", "seconds")
NAMES = {"backlog_produce", "push_drain", "pull_drain", "e2e_latency", "loopback_echo", "rebalance_join"}


def run_bench(*args: str) -> list[dict[str, object]]:
    result = CliRunner().invoke(main, ["bench", "consumer", *args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    return [json.loads(line) for line in lines]


def positive(value: object) -> bool:
    return isinstance(value, int | float) and value > 0


def test_bench_consumer_json(tmp_path: Path) -> None:
    rows = run_bench(
        "--backlog",
        "2000",
        "--size",
        "100",
        "--members",
        "1",
        "--latency-seconds",
        "1",
        "--rate",
        "200",
        "--dir",
        str(tmp_path),
        "--json",
    )
    assert {str(row["name"]) for row in rows} == NAMES
    by_name = {str(row["name"]): row for row in rows}
    assert len(rows) == len(NAMES) + 1  # pull_drain twice: asyncio, then blocking
    for row in rows:
        assert row["size"] == 100
        assert positive(row["messages"]), row
        for key in NUMBERS:
            assert positive(row[key]), (key, row)

    assert by_name["backlog_produce"]["messages"] == 2000
    assert by_name["backlog_produce"]["via"] == "Producer.send_batch"

    drain = by_name["push_drain"]
    assert drain["messages"] == 2000
    assert drain["members"] == 1
    assert drain["per_member"] == "2000"
    for row in (drain, by_name["e2e_latency"]):  # CPU and runs per message: the bench process and the broker
        assert positive(row["cpu_us_per_msg"]) and positive(row["broker_cpu_us_per_msg"]), row
        assert positive(row["runs_per_msg"]) and positive(row["broker_runs_per_msg"]), row
        assert row["compiled"] is rocketq.native.STATUS.compiled
        assert 0 <= row["host_steal"] <= 1, row  # type: ignore[operator]

    pulls = [row for row in rows if row["name"] == "pull_drain"]
    assert [row["api"] for row in pulls] == ["asyncio", "sync"]
    assert all(row["messages"] == 2000 for row in pulls)
    assert positive(pulls[1]["vs_asyncio"]) and "vs_asyncio" not in pulls[0]

    latency = by_name["e2e_latency"]
    for key in ("p50_us", "p99_us", "p999_us", "max_us"):
        assert positive(latency[key]), (key, latency)
    assert latency["p50_us"] <= latency["p99_us"] <= latency["p999_us"]  # type: ignore[operator]
    assert latency["sent"] == 200
    assert latency["lost"] == 0 and latency["messages"] == 200

    echo = by_name["loopback_echo"]
    assert echo["messages"] == 200 and echo["p50_us"] <= echo["p99_us"]  # type: ignore[operator]

    rebalance = by_name["rebalance_join"]
    assert positive(rebalance["assigned_ms"]) and positive(rebalance["first_message_ms"])
    shares = [int(part) for part in str(rebalance["queues"]).split("/")]
    assert len(shares) == 2 and all(shares) and sum(shares) == 8
    assert list(tmp_path.iterdir()) == []  # the scratch directory is removed


def test_bench_consumer_table_two_members(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "consumer",
            "--backlog",
            "1000",
            "--size",
            "64",
            "--members",
            "2",
            "--latency-seconds",
            "0.5",
            "--rate",
            "200",
            "--listener",
            "async",
            "--broker",
            "inline",
            "--pull-batch",
            "64",
            "--dir",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "run in a child process (--broker process)" in result.stdout
    table = result.stdout.splitlines()
    drain = next(line for line in table if line.startswith("push_drain"))
    assert "members=2" in drain and "listener=async" in drain
    assert drain.split()[2] == "64"  # the batch column: messages per pull
    assert any(line.startswith("rebalance_join") for line in table)


def test_bench_consumer_against_a_given_name_server(tmp_path: Path) -> None:
    """-n: no cluster of its own; topics created through the admin client, stored bytes and dispatch
    read from the runtime info, no broker CPU (the broker is not a child of the bench)."""
    with ThreadedCluster(tmp_path) as cluster:
        args = ["-n", cluster.namesrv_addr, "--only", "pull_drain", "--only", "e2e_latency", "--backlog", "500"]
        rows = run_bench(
            *args, "--size", "64", "--latency-seconds", "0.5", "--rate", "100", "--pull-batch", "16", "--json"
        )
        assert [row["name"] for row in rows] == ["backlog_produce", "pull_drain", "pull_drain", "e2e_latency"]
        backlog = rows[0]
        assert backlog["messages"] == 500 and positive(backlog["mb_per_s"])  # stored bytes: commit log offsets
        assert [row["api"] for row in rows[1:3]] == ["asyncio", "sync"]
        assert all(row["messages"] == 500 and row["batch"] == 16 for row in rows[1:3])
        latency = rows[3]
        assert latency["sent"] == 50 and latency["lost"] == 0
        assert latency["p50_us"] <= latency["p99_us"]  # type: ignore[operator]
        assert all("broker_cpu_us_per_msg" not in row for row in rows)

        async def topics() -> list[str]:
            async with AdminClient(cluster.namesrv_addr) as admin:
                return await admin.topic_list()

        created = cluster.call(topics())  # on the given cluster, named for this run
        assert any(name.startswith("BenchDrain64-") for name in created)


def test_bench_consumer_says_when_it_cannot_create_its_topic(tmp_path: Path) -> None:
    with ThreadedCluster(tmp_path) as cluster:
        args = ["bench", "consumer", "-n", cluster.namesrv_addr, "--cluster", "NoSuchCluster", "--only", "e2e_latency"]
        result = CliRunner().invoke(main, [*args, "--json"])
        assert result.exit_code != 0
        assert "could not create topic BenchLatency100-" in str(result.exception)
