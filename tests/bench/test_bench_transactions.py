"""``rocketq bench transactions`` end to end on tiny numbers: the four measurements, their ratios."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rocketq.cli import main


def test_bench_transactions_json(tmp_path: Path) -> None:
    args = ["bench", "transactions", "--messages", "600", "--batch", "50", "--in-flight", "4", "--slices", "3"]
    args += ["--broker", "inline"]
    result = CliRunner().invoke(main, [*args, "--dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    rows = {row["name"]: row for row in map(json.loads, filter(str.strip, result.stdout.splitlines()))}
    assert list(rows) == ["plain_send", "transactional", "plain_batch", "grouped"]
    for row in rows.values():
        assert row["messages"] == 600 and row["msgs_per_s"] > 0 and row["size"] == 100
    transactional, grouped = rows["transactional"], rows["grouped"]
    expected = transactional["msgs_per_s"] / rows["plain_send"]["msgs_per_s"]  # type: ignore[operator]
    assert abs(transactional["ratio"] - expected) < 0.001  # type: ignore[operator]
    assert grouped["ratio"] > 0 and grouped["commit_ms"] > 0 and grouped["batch"] == 50  # type: ignore[operator]
    assert list(tmp_path.iterdir()) == []  # the scratch directory is removed


def test_bench_transactions_table(tmp_path: Path) -> None:
    args = ["bench", "transactions", "--messages", "200", "--batch", "40", "--broker", "inline", "--dir", str(tmp_path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    lines = result.stdout.splitlines()
    assert "ratio = rate / plain rate" in result.stdout
    assert any(line.startswith("grouped") and "ratio=" in line for line in lines)
