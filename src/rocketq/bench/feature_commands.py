"""``rocketq bench`` commands for features beside the message path: ACL, Spark, transactions,
replication and metrics (registered on the ``bench`` group by ``rocketq.bench.commands``)."""

from __future__ import annotations

from pathlib import Path

import click

from rocketq.bench.command_options import broker_option, dir_option, json_option, run_bench, sizes_option


@click.command("acl")
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


@click.command("spark")
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


@click.command("transactions")
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


@click.command("replication")
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


@click.command("metrics")
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
