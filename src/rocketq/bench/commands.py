"""``rocketq bench``: the benchmark commands. Each measures through its module in ``rocketq.bench`` and
prints a table (or JSON lines with ``--json``); results and what each measurement times are in
``docs/benchmarks.md`` and ``bench/README.md``."""

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


@bench.command("acl")
@click.option("--messages", type=click.IntRange(min=1), default=20_000, show_default=True, help="Sends per run.")
@click.option("--rounds", type=click.IntRange(min=1), default=5, show_default=True, help="Runs of each kind.")
@click.option("--in-flight", type=click.IntRange(min=1), default=64, show_default=True, help="Sends in flight.")
@click.option("--size", type=click.IntRange(min=1, max=1_000_000), default=100, show_default=True, help="Body bytes.")
@click.option(
    "--auto-batch/--no-auto-batch",
    default=True,
    show_default=True,
    help="The producers batch waiting sends (ProducerConfig.auto_batch); off: one request per message.",
)
@dir_option
@json_option
def bench_acl(
    messages: int, rounds: int, in_flight: int, size: int, auto_batch: bool, directory: Path | None, as_json: bool
) -> None:
    """Measure what ACL costs: sends per second with and without aclEnable, alternating runs."""
    from rocketq.bench.acl import NOTES, AclBenchOptions, run_acl_bench

    options = AclBenchOptions(
        messages=messages, rounds=rounds, in_flight=in_flight, size=size, auto_batch=auto_batch, directory=directory
    )

    run_bench(lambda emit: run_acl_bench(options, emit), NOTES, as_json)


@bench.command("spark")
@sizes_option
@click.option(
    "--messages", type=click.IntRange(min=1), default=1_000_000, show_default=True, help="Messages the source reads."
)
@click.option(
    "--sink-messages", type=click.IntRange(min=1), default=200_000, show_default=True, help="Rows the sink writes."
)
@click.option(
    "--micro-batches",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Micro-batches the stream sink measurements write the rows in.",
)
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True, help="Timed runs of each.")
@click.option("--no-store", is_flag=True, help="Leave out the offline store reader's measurements.")
@click.option(
    "--max-pull-bytes",
    type=click.IntRange(min=1024),
    default=None,
    help="The broker's maxPullBytes (the cap on a pull's answer).  [default: the broker's, 256 KiB]",
)
@dir_option
@json_option
def bench_spark(
    sizes: tuple[int, ...],
    messages: int,
    sink_messages: int,
    micro_batches: int,
    repeat: int,
    no_store: bool,
    max_pull_bytes: int | None,
    directory: Path | None,
    as_json: bool,
) -> None:
    """Measure the Spark connector: source and sink rates against the Python data source API's ceiling."""
    from rocketq.bench.spark import NOTES, SparkBenchOptions, run_spark_bench

    options = SparkBenchOptions(
        sizes=sizes or (100, 1024),
        messages=messages,
        sink_messages=sink_messages,
        micro_batches=micro_batches,
        repeat=repeat,
        store=not no_store,
        max_pull_bytes=max_pull_bytes,
        directory=directory,
    )

    run_bench(lambda emit: run_spark_bench(options, emit), NOTES, as_json, path_note=False)


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
@broker_option
@dir_option
@json_option
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

    run_bench(lambda emit: run_transaction_bench(options, emit), NOTES, as_json)


@bench.command("replication")
@sizes_option
@click.option("--inflight", type=click.IntRange(min=1), default=64, show_default=True, help="Sends in flight.")
@click.option(
    "--duration", type=click.FloatRange(min=0.1), default=5.0, show_default=True, help="Seconds measured per run."
)
@click.option(
    "--catch-up-mb", type=click.IntRange(min=1), default=64, show_default=True, help="Log a new slave copies."
)
@click.option(
    "--transfer-batch-kb",
    type=click.IntRange(min=1, max=4096),
    multiple=True,
    help="Also time a catch-up only, from a master with this haTransferBatchSize (KiB; repeatable).",
)
@click.option("--catch-up-only", is_flag=True, help="Skip the send runs: catch-ups only.")
@click.option(
    "--failover-rounds",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Masters killed with failover on (needs etcd); 0: none.",
)
@dir_option
@json_option
def bench_replication(
    sizes: tuple[int, ...],
    inflight: int,
    duration: float,
    catch_up_mb: int,
    transfer_batch_kb: tuple[int, ...],
    catch_up_only: bool,
    failover_rounds: int,
    directory: Path | None,
    as_json: bool,
) -> None:
    """Measure sends to a lone master, an ASYNC_MASTER and a SYNC_MASTER with a slave, the slave's lag,
    and how fast a new slave copies a master's CommitLog."""
    from rocketq.bench.replication import NOTES, ReplicationBenchOptions, run_replication_bench

    options = ReplicationBenchOptions(
        sizes=sizes or (100, 1024),
        in_flight=inflight,
        duration_s=duration,
        catch_up_mb=catch_up_mb,
        transfer_batch_sizes=tuple(kb * 1024 for kb in transfer_batch_kb),
        sends=not catch_up_only,
        failover_rounds=failover_rounds,
        directory=directory,
    )
    run_bench(lambda emit: run_replication_bench(options, emit), NOTES, as_json)


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


@bench.command("metrics")
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=6,
    show_default=True,
    help="Rounds (metrics on and off; half per start order).",
)
@click.option("--duration", type=click.FloatRange(min=0.1), default=5.0, show_default=True, help="Seconds of sends.")
@click.option(
    "--size", type=click.IntRange(min=1, max=4 * 1024 * 1024), default=100, show_default=True, help="Body bytes."
)
@click.option("--inflight", type=click.IntRange(min=1), default=64, show_default=True, help="Calls in flight.")
@click.option(
    "--batch", type=click.IntRange(min=1), default=1, show_default=True, help="Messages per call (send_batch)."
)
@click.option(
    "--scrape-interval",
    type=click.FloatRange(min=0.05),
    default=1.0,
    show_default=True,
    help="Seconds between scrapes of /metrics while metrics are on.",
)
@click.option(
    "--drain-backlog",
    type=click.IntRange(min=1),
    default=1_000_000,
    show_default=True,
    help="Messages each drain reads (a topic written once, read by a new group each round).",
)
@click.option(
    "--send-rate",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Messages a second both brokers are sent (the same load for both); 0: as fast as each takes them.",
)
@dir_option
@json_option
def bench_metrics(
    rounds: int,
    duration: float,
    size: int,
    inflight: int,
    batch: int,
    scrape_interval: float,
    drain_backlog: int,
    send_rate: int,
    directory: Path | None,
    as_json: bool,
) -> None:
    """Measure what the Prometheus metrics cost: send and drain rates with metrics on and off, alternating."""
    from rocketq.bench.metrics import NOTES, MetricsBenchOptions, run_metrics_bench

    options = MetricsBenchOptions(
        rounds=rounds, duration_s=duration, size=size, in_flight=inflight, batch=batch,
        scrape_interval_s=scrape_interval, drain_backlog=drain_backlog, directory=directory, send_rate=send_rate,
    )  # fmt: skip
    run_bench(lambda emit: run_metrics_bench(options, emit), NOTES, as_json)
