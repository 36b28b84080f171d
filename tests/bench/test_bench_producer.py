"""``rocketq bench producer`` end to end on tiny durations: a line per second, then the whole run, against
a broker it starts and against a NameServer it is given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from rocketq.cli import main
from rocketq.client.admin import AdminClient
from rocketq.testing import ThreadedCluster, wait_until


def rows_of(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def test_against_a_broker_it_starts(tmp_path: Path) -> None:
    args = ["bench", "producer", "--duration", "2.5", "--inflight", "4", "--dir", str(tmp_path), "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    *seconds, run = rows_of(result.stdout)
    assert [row["second"] for row in seconds] == list(range(1, len(seconds) + 1)) and seconds
    assert all(row["name"] == "producer_second" and row["writers"] == 4 for row in seconds)
    assert run["name"] == "producer" and run["api"] == "asyncio" and run["flush"] == "async"
    assert run["messages"] >= sum(row["messages"] for row in seconds) > 0
    assert run["p50_us"] <= run["p99_us"] <= run["p999_us"]
    assert run["broker_cpu_us_per_msg"] > 0  # the broker is a child process here: its CPU is measured
    assert list(tmp_path.iterdir()) == []  # the scratch directory is removed


def test_against_a_given_name_server_with_the_blocking_api(tmp_path: Path) -> None:
    with ThreadedCluster(tmp_path) as cluster:

        async def create() -> None:
            async with AdminClient(cluster.namesrv_addr) as admin:
                await admin.update_topic("Given", cluster="DefaultCluster", read_queues=2, write_queues=2)

        cluster.call(create())
        args = ["bench", "producer", "-n", cluster.namesrv_addr, "-t", "Given", "--sync-api", "--batch", "10"]
        result = CliRunner().invoke(main, [*args, "--inflight", "2", "--duration", "0.5", "--json"])
        assert result.exit_code == 0, result.output + repr(result.exception)
        run = rows_of(result.stdout)[-1]
        assert run["name"] == "producer" and run["api"] == "sync" and run["batch"] == 10
        assert run["messages"] > 0 and run["messages"] % 10 == 0
        assert "broker_cpu_us_per_msg" not in run  # not a broker of this command's
        store = cluster.cluster.brokers[0].store
        # every acknowledged message is stored (the warm-up second's come on top), once dispatched
        wait_until(lambda: sum(store.get_max_offset_in_queue("Given", queue) for queue in range(2)) >= run["messages"])


def test_flush_needs_the_broker_started_here() -> None:
    result = CliRunner().invoke(main, ["bench", "producer", "-n", "127.0.0.1:9876", "--flush"])
    assert result.exit_code == 2 and "--flush" in result.output
