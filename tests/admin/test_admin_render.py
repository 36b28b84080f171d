"""How ``rocketq admin`` prints: rich tables that keep odd cells harmless, and errors as JSON under ``--json``."""

from __future__ import annotations

import json

from click.testing import CliRunner

from rocketq.admin.cli import admin
from rocketq.admin.render import cell, table


def test_cells_with_newlines_binary_markup_and_control_characters_stay_harmless() -> None:
    text = table(["id", "body"], [[1, "first\nsecond"], [2, b"\x00\xff"], [3, "[bold]x[/bold] \x1b[2J bell\x07"]])
    lines = text.splitlines()
    assert lines[0].split() == ["id", "body"] and set(lines[1]) <= {"─", " "}
    assert lines[2].split() == ["1", "first"] and lines[3].strip() == "second"  # one cell, two lines
    assert lines[4].split() == ["2", "00ff"]
    assert "[bold]x[/bold] \\x1b[2J bell\\x07" in lines[5] and "\x1b" not in text and "\x07" not in text
    assert cell(None) == "" and cell("tab\there") == "tab\there"


def test_long_rows_are_not_wrapped() -> None:
    long = "k" * 500
    assert long in table(["key"], [[long]]).splitlines()[2]


def test_errors_with_json_are_a_json_object() -> None:
    result = CliRunner().invoke(admin, ["topicList", "-n", "127.0.0.1:1", "--json"])
    assert result.exit_code == 1
    assert "NameServer" in json.loads(result.output)["error"]
    usage = CliRunner().invoke(admin, ["brokerStatus", "-n", "127.0.0.1:1", "--json"])
    assert usage.exit_code == 1 and "-b" in json.loads(usage.output)["error"]
    plain = CliRunner().invoke(admin, ["topicList", "-n", "127.0.0.1:1"])
    assert plain.exit_code == 1 and plain.output.startswith("Error: ")
