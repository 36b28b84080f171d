"""Output for the admin commands: aligned text tables for people, JSON for scripts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import click


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(value.ljust(width) for value, width in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])


def emit(
    as_json: bool, document: Any, headers: Sequence[str] | None = None, rows: Sequence[Sequence[Any]] = ()
) -> None:
    if as_json:
        click.echo(json.dumps(document, indent=2, sort_keys=True, default=str))
    elif headers is not None:
        click.echo(table(headers, rows))
    else:
        for key, value in document.items():
            click.echo(f"{key:<22} {value}")


def timestamp(ms: int | None) -> str:
    return "" if not ms else datetime.fromtimestamp(ms / 1000).isoformat(sep=" ", timespec="milliseconds")
