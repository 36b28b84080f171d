"""``rocketq bench query`` end to end on a tiny store: the measurements it promises, each query checked."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rocketq.cli import main


def test_bench_query_json(tmp_path: Path) -> None:
    args = ["bench", "query", "--messages", "3000", "--queries", "40", "--warmup", "5", "--broker", "inline"]
    result = CliRunner().invoke(main, [*args, "--dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    rows = {row["name"]: row for row in map(json.loads, result.stdout.splitlines())}
    assert set(rows) == {
        "query_store_build",
        "loopback_echo",
        "query_by_key",
        "query_by_unique_key",
        "view_by_offset_id",
    }
    assert rows["query_store_build"]["messages"] == 3000 and rows["query_store_build"]["msgs_per_s"] > 0
    for name in ("query_by_key", "query_by_unique_key", "view_by_offset_id"):
        row = rows[name]
        assert row["messages"] == 40 and row["store_messages"] == 3000
        assert 0 < row["p50_us"] <= row["p99_us"] <= row["p999_us"]
        assert row["vs_echo_p99"] > 0
    assert rows["query_by_key"]["meets_target"] in ("yes", "no") and rows["query_by_key"]["target_p99_ms"] == 5.0
    assert list(tmp_path.iterdir()) == []  # the scratch store is removed
