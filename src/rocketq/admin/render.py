"""Output for the admin commands: tables (``rich``) for people, JSON for scripts.

Table cells are plain text, never markup. A cell holding several lines (a message body, a stack) stays a
multi-line cell; bytes are shown as hex; other control characters are escaped (``\\x07``), so whatever a
message carries cannot move the cursor or garble the terminal. Tables are never wrapped to the terminal's
width: a line a script greps for stays on one line.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

_KEEP = frozenset("\n\t")
WIDE = 100_000  # tables are as wide as their cells need


def cell(value: Any) -> str:
    """A value as a table cell: "" for None, hex for bytes, control characters escaped."""
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    text = str(value)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in _KEEP else repr(c)[1:-1] for c in text)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """``rows`` under ``headers``, columns left-aligned, a rule under the header."""
    grid = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style=None, expand=False)
    for header in headers:
        grid.add_column(Text(header), overflow="fold", no_wrap=False)
    for row in rows:
        grid.add_row(*(Text(cell(value)) for value in row))
    out = io.StringIO()
    Console(file=out, width=WIDE, color_system=None, highlight=False, emoji=False, markup=False).print(grid)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines() if line.strip())


def emit(
    as_json: bool, document: Any, headers: Sequence[str] | None = None, rows: Sequence[Sequence[Any]] = ()
) -> None:
    """``document`` as JSON, or ``rows`` as a table, or (no headers) ``document``'s items one a line."""
    if as_json:
        click.echo(json.dumps(document, indent=2, sort_keys=True, default=str))
    elif headers is not None:
        click.echo(table(headers, rows))
    else:
        click.echo(table(["key", "value"], list(document.items())))


def timestamp(ms: int | None) -> str:
    return "" if not ms else datetime.fromtimestamp(ms / 1000).isoformat(sep=" ", timespec="milliseconds")


class AdminGroup(click.Group):
    """The ``rocketq admin`` group: a command given ``--json`` reports an error as a JSON object,
    ``{"error": "..."}``, with exit status 1 (usage errors too)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_WANTS_JSON] = "--json" in args
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            if not ctx.meta.get(_WANTS_JSON):
                raise
            click.echo(json.dumps({"error": exc.format_message()}))
            raise click.exceptions.Exit(1) from exc


_WANTS_JSON = "rocketq.admin.json"
