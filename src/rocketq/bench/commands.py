"""``rocketq bench``: the benchmark commands. Each measures through its module in ``rocketq.bench`` and
prints a table (or JSON lines with ``--json``); results and what each measurement times are in
``docs/benchmarks.md`` and ``bench/README.md``. The message path's commands are here; the features'
are in ``rocketq.bench.feature_commands``."""

from __future__ import annotations

from pathlib import Path

import click

from rocketq.bench.command_options import broker_option, dir_option, json_option, run_bench, sizes_option
from rocketq.bench.feature_commands import bench_acl, bench_metrics, bench_replication, bench_spark, bench_transactions


@click.group()
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
@dir_option
@json_option
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

    def extra_notes() -> None:
        if flush != "async":
            for count in options.writers:
                click.echo(f"SYNC_FLUSH with {count} writer(s): {options.sync_messages(count):,} messages.")

    run_bench(lambda emit: run_store_bench(options, emit), NOTES, as_json, extra=extra_notes)


@bench.command("filter")
@click.option(
    "--messages", type=click.IntRange(min=1), default=1_000_000, show_default=True, help="Messages in each store."
)
@click.option(
    "--match-percent",
    type=click.IntRange(min=1, max=100),
    default=10,
    show_default=True,
    help="Share of the messages the SQL92 selector matches.",
)
@click.option("--size", type=click.IntRange(min=1), default=100, show_default=True, help="Body size in bytes.")
@click.option("--queues", type=click.IntRange(min=1), default=4, show_default=True, help="Queues of the topic.")
@click.option("--pull-batch", type=click.IntRange(min=1), default=32, show_default=True, help="Messages per pull.")
@click.option(
    "--rounds", type=click.IntRange(min=1), default=3, show_default=True, help="Turns each pull run takes (best kept)."
)
@dir_option
@json_option
def bench_filter(
    messages: int,
    match_percent: int,
    size: int,
    queues: int,
    pull_batch: int,
    rounds: int,
    directory: Path | None,
    as_json: bool,
) -> None:
    """Measure SQL92-filtered pulls with and without the bloom filter bit maps, and their dispatch cost."""
    from rocketq.bench.filter import NOTES, FilterBenchOptions, run_filter_bench

    options = FilterBenchOptions(
        messages=messages,
        match_percent=match_percent,
        size=size,
        queues=queues,
        pull_batch=pull_batch,
        rounds=rounds,
        directory=directory,
    )

    def extra_notes() -> None:
        click.echo(f"Selector: {options.expression}")

    run_bench(lambda emit: run_filter_bench(options, emit), NOTES, as_json, extra=extra_notes)


@bench.command("consumer")
@sizes_option
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
    "--only",
    type=click.Choice(["push_drain", "pull_drain", "e2e_latency", "loopback_echo", "rebalance_join"]),
    multiple=True,
    help="Take only these measurements (repeatable; the backlog is written when a drain is taken).  [default: all]",
)
@click.option(
    "-n",
    "--namesrv",
    default=None,
    help="An existing cluster's NameServer (rocketq's or RocketMQ's).  [default: start one]",
)
@click.option("--cluster", default="DefaultCluster", show_default=True, help="With -n: the cluster given the topics.")
@broker_option
@dir_option
@json_option
def bench_consumer(
    sizes: tuple[int, ...],
    backlog: int,
    members: tuple[int, ...],
    rate: int,
    latency_seconds: float,
    listener: str,
    pull_batch: int,
    only: tuple[str, ...],
    namesrv: str | None,
    cluster: str,
    broker: str,
    directory: Path | None,
    as_json: bool,
) -> None:
    """Measure consumers: push and pull drain rates, end-to-end latency, rebalance time, on a cluster
    started here or (-n) an existing one."""
    from rocketq.bench.consumer import run_consumer_bench
    from rocketq.bench.consumer_options import NOTES, ConsumerBenchOptions

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
        namesrv_addr=namesrv,
        cluster=cluster,
        only=only,
    )

    run_bench(lambda emit: run_consumer_bench(options, emit), NOTES, as_json)


@bench.command("query")
@click.option(
    "--messages",
    type=click.IntRange(min=1),
    default=10_000_000,
    show_default=True,
    help="Messages in the store (100-byte bodies, unique keys; about 330 bytes of disk each).",
)
@click.option(
    "--queries", type=click.IntRange(min=1), default=10_000, show_default=True, help="Timed queries of each kind."
)
@click.option(
    "--warmup", type=click.IntRange(min=0), default=500, show_default=True, help="Untimed queries of each kind first."
)
@broker_option
@dir_option
@json_option
def bench_query(messages: int, queries: int, warmup: int, broker: str, directory: Path | None, as_json: bool) -> None:
    """Measure message queries (by key, by unique key, by offset id) on a large store through a broker."""
    from rocketq.bench.query import NOTES, QueryBenchOptions, run_query_bench

    options = QueryBenchOptions(messages=messages, queries=queries, warmup=warmup, broker=broker, directory=directory)

    run_bench(lambda emit: run_query_bench(options, emit), NOTES, as_json)


@bench.command("producer")
@click.option(
    "-n", "--namesrv", default=None, help="A NameServer (rocketq's or RocketMQ's).  [default: start one here]"
)
@click.option("-t", "--topic", default="BenchProducer", show_default=True, help="The topic sent to.")
@click.option(
    "--size", type=click.IntRange(min=1, max=4 * 1024 * 1024), default=100, show_default=True, help="Body bytes."
)
@click.option("--inflight", type=click.IntRange(min=1), default=64, show_default=True, help="Calls in flight.")
@click.option(
    "--batch", type=click.IntRange(min=1), default=1, show_default=True, help="Messages per call (send_batch)."
)
@click.option("--duration", type=click.FloatRange(min=0.1), default=10.0, show_default=True, help="Seconds measured.")
@click.option("--flush", is_flag=True, help="SYNC_FLUSH on the broker started here (ASYNC_FLUSH otherwise).")
@click.option("--sync-api", is_flag=True, help="Threads calling SyncProducer instead of asyncio tasks.")
@click.option(
    "--auto-batch/--no-auto-batch",
    default=True,
    show_default=True,
    help="ProducerConfig.auto_batch: single sends made while others are in flight leave as one batch.",
)
@dir_option
@json_option
def bench_producer(
    namesrv: str | None,
    topic: str,
    size: int,
    inflight: int,
    batch: int,
    duration: float,
    flush: bool,
    sync_api: bool,
    auto_batch: bool,
    directory: Path | None,
    as_json: bool,
) -> None:
    """Measure a producer's sends per second and latency, a line per second, against any NameServer."""
    from rocketq.bench.producer import NOTES, ProducerBenchOptions, run_producer_bench

    if flush and namesrv is not None:
        raise click.UsageError("--flush sets up the broker started here: leave out -n, or set flushDiskType there")
    options = ProducerBenchOptions(
        namesrv_addr=namesrv, topic=topic, size=size, in_flight=inflight, batch=batch, duration_s=duration,
        sync_flush=flush, sync_api=sync_api, auto_batch=auto_batch, directory=directory,
    )  # fmt: skip

    run_bench(lambda emit: run_producer_bench(options, emit), NOTES, as_json)


for _command in (bench_acl, bench_spark, bench_transactions, bench_replication, bench_metrics):
    bench.add_command(_command)
