"""The ``rocketq`` command line: servers (``namesrv``, ``broker``, ``up``), ``admin`` and ``bench``."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from rocketq import __version__
from rocketq.admin.cli import admin
from rocketq.bench import Measurement, message_path_note, table_header, table_row
from rocketq.runner import broker_command, namesrv_command, up_command

log = logging.getLogger(__name__)


@click.group()
@click.version_option(__version__, prog_name="rocketq")
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    default="WARNING",
    show_default=True,
    help="Logging level (logs go to stderr).",
)
def main(log_level: str) -> None:
    """rocketq: a RocketMQ-compatible message queue."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")


@main.group()
def bench() -> None:
    """Benchmarks."""


@bench.command("store")
@click.option(
    "--size",
    "sizes",
    type=click.IntRange(min=1),
    multiple=True,
    help="Message body size in bytes (repeatable).  [default: 100 and 1024]",
)
@click.option(
    "--messages", type=click.IntRange(min=1), default=1_000_000, show_default=True, help="Messages per append run."
)
@click.option(
    "--flush",
    type=click.Choice(["async", "sync", "both"]),
    default="both",
    show_default=True,
    help="Which flush modes to measure.",
)
@click.option(
    "--writers",
    type=click.IntRange(min=1),
    multiple=True,
    help="SYNC_FLUSH concurrent writers (repeatable).  [default: 1 and 32]",
)
@click.option(
    "--writer-kind",
    type=click.Choice(["loop", "threads", "both"]),
    default="both",
    show_default=True,
    help="SYNC_FLUSH writers as coroutines on one event loop (the broker's way), threads, or both.",
)
@click.option(
    "--batch",
    type=click.IntRange(min=2),
    default=64,
    show_default=True,
    help="Messages per put_messages call in the batched async run (batch 1 is always measured too).",
)
@click.option(
    "--backlog", type=click.IntRange(min=1), default=None, help="Also grow one store to this many 100-byte messages."
)
@click.option(
    "--backlog-step",
    type=click.IntRange(min=1),
    default=1_000_000,
    show_default=True,
    help="Report the backlog run every this many messages.",
)
@click.option(
    "--file-size",
    type=click.IntRange(min=64 * 1024),
    default=None,
    help="CommitLog file size in bytes.  [default: StoreConfig's, 1 GiB]",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to create the scratch directory (removed afterwards).  [default: the system temp dir]",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per measurement per line.")
def bench_store(
    sizes: tuple[int, ...],
    messages: int,
    flush: str,
    writers: tuple[int, ...],
    writer_kind: str,
    batch: int,
    backlog: int | None,
    backlog_step: int,
    file_size: int | None,
    directory: Path | None,
    as_json: bool,
) -> None:
    """Measure the storage engine: append, group commit, dispatch, reads, against the raw disk."""
    from rocketq.bench.store import NOTES, StoreBenchOptions, run_store_bench

    options = StoreBenchOptions(
        sizes=sizes or (100, 1024),
        messages=messages,
        flush=flush,
        writers=writers or (1, 32),
        writer_kinds=("loop", "threads") if writer_kind == "both" else (writer_kind,),
        batch=batch,
        backlog=backlog,
        backlog_step=backlog_step,
        file_size=file_size,
        directory=directory,
    )

    def emit(measurement: Measurement) -> None:
        click.echo(measurement.to_json() if as_json else table_row(measurement))

    if not as_json:
        click.echo(message_path_note())
        for note in NOTES:
            click.echo(note)
        if flush != "async":
            for count in options.writers:
                click.echo(f"SYNC_FLUSH with {count} writer(s): {options.sync_messages(count):,} messages.")
        click.echo()
        click.echo(table_header())
    run_store_bench(options, emit)


@bench.command("consumer")
@click.option(
    "--size",
    "sizes",
    type=click.IntRange(min=1, max=1_000_000),
    multiple=True,
    help="Message body size in bytes (repeatable).  [default: 100 and 1024]",
)
@click.option(
    "--backlog",
    type=click.IntRange(min=1),
    default=1_000_000,
    show_default=True,
    help="Messages in the backlog each drain run consumes.",
)
@click.option(
    "--members",
    type=click.IntRange(min=1),
    multiple=True,
    help="Consumer members of a drain run (repeatable; a new group each).  [default: 1 and 2]",
)
@click.option(
    "--rate",
    type=click.IntRange(min=1, max=1_000_000),
    default=1000,
    show_default=True,
    help="Messages per second of the latency and rebalance streams.",
)
@click.option(
    "--latency-seconds",
    type=click.FloatRange(min=0.01),
    default=10.0,
    show_default=True,
    help="How long the latency stream runs.",
)
@click.option(
    "--listener",
    type=click.Choice(["sync", "async"]),
    default="sync",
    show_default=True,
    help="A plain listener (run in the consumer's thread pool) or a coroutine one (run on the event loop).",
)
@click.option(
    "--pull-batch",
    type=click.IntRange(1, 65536),
    default=32,
    show_default=True,
    help="The consumers' pull_batch_size: messages per pull request.",
)
@click.option(
    "--broker",
    type=click.Choice(["process", "inline"]),
    default="process",
    show_default=True,
    help="NameServer and broker in a child process (their own core), or in the bench's own event loop.",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to create the scratch directory (removed afterwards).  [default: the system temp dir]",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per measurement per line.")
def bench_consumer(
    sizes: tuple[int, ...],
    backlog: int,
    members: tuple[int, ...],
    rate: int,
    latency_seconds: float,
    listener: str,
    pull_batch: int,
    broker: str,
    directory: Path | None,
    as_json: bool,
) -> None:
    """Measure push consumers on a local cluster: drain rate, end-to-end latency, rebalance time."""
    from rocketq.bench.consumer import NOTES, ConsumerBenchOptions, run_consumer_bench

    options = ConsumerBenchOptions(
        sizes=sizes or (100, 1024),
        backlog=backlog,
        members=members or (1, 2),
        rate=rate,
        latency_seconds=latency_seconds,
        listener=listener,
        pull_batch=pull_batch,
        broker=broker,
        directory=directory,
    )

    def emit(measurement: Measurement) -> None:
        click.echo(measurement.to_json() if as_json else table_row(measurement))

    if not as_json:
        click.echo(message_path_note())
        for note in NOTES:
            click.echo(note)
        click.echo()
        click.echo(table_header())
    run_consumer_bench(options, emit)


@bench.command("transactions")
@click.option(
    "--messages", type=click.IntRange(min=1), default=20_000, show_default=True, help="Messages per measurement."
)
@click.option(
    "--size", type=click.IntRange(min=8, max=1_000_000), default=100, show_default=True, help="Body size in bytes."
)
@click.option(
    "--in-flight", type=click.IntRange(min=1), default=32, show_default=True, help="Sends (or batches) in flight."
)
@click.option("--batch", type=click.IntRange(min=1), default=256, show_default=True, help="Messages per batch.")
@click.option(
    "--slices", type=click.IntRange(min=1), default=4, show_default=True, help="Alternating slices of each pair."
)
@click.option("--rounds", type=click.IntRange(min=1), default=1, show_default=True, help="Rounds of all four.")
@click.option(
    "--broker",
    type=click.Choice(["process", "inline"]),
    default="process",
    show_default=True,
    help="NameServer and broker in a child process (their own core), or in the bench's own event loop.",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to create the scratch directory (removed afterwards).  [default: the system temp dir]",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per measurement per line.")
def bench_transactions(
    messages: int,
    size: int,
    in_flight: int,
    batch: int,
    slices: int,
    rounds: int,
    broker: str,
    directory: Path | None,
    as_json: bool,
) -> None:
    """Measure transactional messages and grouped transactions against plain sends of the same shape."""
    from rocketq.bench.transactions import NOTES, TransactionBenchOptions, run_transaction_bench

    options = TransactionBenchOptions(
        messages=messages, size=size, in_flight=in_flight, batch=batch, slices=slices, rounds=rounds,
        broker=broker, directory=directory,
    )  # fmt: skip

    def emit(measurement: Measurement) -> None:
        click.echo(measurement.to_json() if as_json else table_row(measurement))

    if not as_json:
        click.echo(message_path_note())
        for note in NOTES:
            click.echo(note)
        click.echo()
        click.echo(table_header())
    run_transaction_bench(options, emit)


main.add_command(admin)
main.add_command(namesrv_command)
main.add_command(broker_command)
main.add_command(up_command)


if __name__ == "__main__":
    main()
