"""What the ``rocketq bench`` commands share: their common options and ``run_bench``, which prints each
measurement as a table row or a JSON line."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import click

from rocketq.bench import Measurement, Sink, message_path_note, table_header, table_row

dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to create the scratch directory (removed afterwards).  [default: the system temp dir]",
)
sizes_option = click.option(
    "--size",
    "sizes",
    type=click.IntRange(min=1, max=1_000_000),
    multiple=True,
    help="Message body size in bytes (repeatable).  [default: 100 and 1024]",
)
broker_option = click.option(
    "--broker",
    type=click.Choice(["process", "inline"]),
    default="process",
    show_default=True,
    help="NameServer and broker in a child process (their own core), or in the bench's own event loop.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object per measurement per line.")


def run_bench(
    run: Callable[[Sink], None],
    notes: Sequence[str],
    as_json: bool,
    *,
    extra: Callable[[], None] | None = None,
    path_note: bool = True,
) -> None:
    """Run a benchmark, printing each measurement as a table row (after the notes and the header) or as
    a JSON line. ``extra`` prints more notes; ``path_note`` says whether the message path ran compiled."""

    def emit(measurement: Measurement) -> None:
        click.echo(measurement.to_json() if as_json else table_row(measurement))

    if not as_json:
        if path_note:
            click.echo(message_path_note())
        for note in notes:
            click.echo(note)
        if extra is not None:
            extra()
        click.echo()
        click.echo(table_header())
    run(emit)
