"""The offline store reader's benchmark: the ``rocketmq-store`` Spark source into a noop sink, and the
columnar decode alone against ``decode_messages``.

Run it with ``python -m rocketq.bench.spark_store [--messages N] [--size 100 --size 1024] [--json]``
(needs the ``rocketq[spark]`` extra and a JVM). For each body size:

- a store is written with the store's fast batch append (SEND_BATCH_MESSAGE bodies of 256 messages,
  ``measure_batch`` + ``put_batch``; 8 queues, default file sizes) and closed;
- ``decode_columns`` / ``decode_columns_props``: ``message_batch`` over a pull-like buffer of
  ``DECODE_MESSAGES`` records of one queue, without / with the properties column; ``decode_messages``:
  the per-message decoder over the same buffer, and ``decode_messages_rows`` the same plus reading every
  value of a row (what a row-based reader does). Rates are messages per CPU-second of this process,
  best of ``runs``;
- ``spark_store_read``: ``spark.read.format("rocketmq-store")...write.format("noop")`` over the whole
  store on ``local[2]``, with and without body CRC checks, in the source's own settings (its default
  ``partitions`` and ``batchSize``); wall-clock rate, median of ``runs`` after a warm-up
  (``best_per_s`` in the notes), and the CPU-seconds of the whole process tree (JVM and Python
  workers, read from ``/proc``; ``us_per_msg``: per message);
- ``spark_arrow_ceiling``: the peer in the same run, what Spark's Python data source path costs by
  itself: a source whose tasks yield one already decoded batch of the same rows over and over (as many
  rows, as many tasks as the store read plans, batches of its ``batchSize``), into the same noop sink.
  ``vs_ceiling`` in the store read's notes is its rate over this one's. The three take turns, run by
  run, so that they see the same minutes of a shared host.
"""

from __future__ import annotations

import functools
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rocketq.bench import MB, Measurement, Sink, table_header, table_row
from rocketq.bench.store_workload import QUEUES, TOPIC, build_messages, build_wire_batches
from rocketq.store import compiled_append
from rocketq.store.config import StoreConfig
from rocketq.store.message_store import MessageStore
from rocketq.store.offset_files import OffsetFiles
from rocketq.store.readonly import ENTRY_DTYPE, StoreReader

DECODE_MESSAGES = 200_000
DEFAULT_MESSAGES = 3_000_000
WRITE_CHUNK = 64 * 1024  # messages built and appended at a time
WIRE_BATCH = 256


@dataclass(slots=True)
class SparkStoreBenchOptions:
    sizes: Sequence[int] = (100, 1024)
    messages: int = DEFAULT_MESSAGES
    runs: int = 3
    batch_size: int | None = None  # the source's batchSize option (None: its default)
    directory: Path | None = None  # where the scratch stores go (default: the system temp directory)
    spark: bool = True  # False: only the decode measurements
    extra_conf: dict[str, str] = field(default_factory=dict)


def write_store(root: Path, size: int, count: int) -> int:
    """A closed store of ``count`` bench messages with ``size``-byte bodies; returns its CommitLog bytes."""
    if compiled_append.load() is None:
        raise RuntimeError("the fast batch append needs numba")
    config = StoreConfig(store_path_root_dir=root)
    with MessageStore(config) as store:
        for start in range(0, count, WRITE_CHUNK):
            messages = build_messages(size, min(WRITE_CHUNK, count - start), start)
            for batch in build_wire_batches(messages, WIRE_BATCH):
                measured = store.measure_batch(batch)
                if measured is None or not store.put_batch(measured, dispatch=False).ok:
                    raise RuntimeError("the store refused a bench batch")
            store.dispatch_now()
        return store.commit_log.max_offset


def pull_like_buffer(root: Path, count: int) -> bytes:
    """The first ``count`` records of queue 0, one after the other (as a pull body holds them)."""
    with StoreReader(root) as reader:
        first = reader.queue_files(TOPIC, 0)[0]
    entries = np.fromfile(first.path, dtype=ENTRY_DTYPE, count=min(count, first.entries))
    entries = entries[entries["size"] > 0]
    commit_log = OffsetFiles(root / "commitlog")
    parts: list[bytes] = []
    for position, size in zip(entries["offset"].tolist(), entries["size"].tolist(), strict=True):
        start = commit_log.find(position)
        assert start is not None, f"no CommitLog file holds byte {position}"
        with commit_log.path(start).open("rb") as file:
            file.seek(position - start)
            parts.append(file.read(size))
    return b"".join(parts)


def best_cpu_seconds(action: Callable[[], object], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        began = time.process_time()
        action()
        best = min(best, time.process_time() - began)
    return max(best, 1e-9)


def decode_measurements(root: Path, size: int, runs: int) -> list[Measurement]:
    """The columnar decode against ``decode_messages`` on one pull-like buffer, per CPU-second."""
    from rocketq.client.columns import message_batch
    from rocketq.client.message import decode_messages

    data = pull_like_buffer(root, DECODE_MESSAGES)
    count = len(message_batch(data, broker_name="b"))  # compiles or loads the kernels

    def rows() -> None:
        for m in decode_messages(data):
            _ = (m.topic, m.queue_id, m.queue_offset, m.msg_id, m.tags, m.properties.get("KEYS"), m.body)
            _ = (m.born_timestamp, m.store_timestamp, m.reconsume_times)

    actions: list[tuple[str, Callable[[], object]]] = [
        ("decode_columns", lambda: message_batch(data, broker_name="b")),
        ("decode_columns_props", lambda: message_batch(data, broker_name="b", include_properties=True)),
        ("decode_messages", lambda: decode_messages(data)),
        ("decode_messages_rows", rows),
    ]
    results = []
    for name, action in actions:
        seconds = best_cpu_seconds(action, runs)
        results.append(Measurement.from_counts(name, size, count, seconds, len(data), extra={"per": "cpu_s"}))
    columns_rate, rows_rate = results[0].msgs_per_s, results[3].msgs_per_s
    results[0].extra["vs_decode_messages_rows"] = columns_rate / rows_rate
    return results


def tree_cpu_seconds(pid: int, *, skip: Collection[int] = (), command: str | None = None) -> float:
    """CPU-seconds (user + system, own and reaped children's) of ``pid`` and all its descendants, leaving
    out the trees under ``skip``; with ``command``, only the descendants (not ``pid`` itself) whose command
    name starts with it (``"python"``: Spark's Python workers under the driver's JVM)."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    names: dict[int, str] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        parents[int(entry.name)] = int(fields[1])
        times[int(entry.name)] = sum(int(value) for value in fields[11:15]) / tick
        names[int(entry.name)] = stat[stat.index("(") + 1 : stat.rindex(")")]
    total, stack = 0.0, [pid]
    while stack:
        current = stack.pop()
        if current in skip:
            continue
        if command is None or (current != pid and names.get(current, "").startswith(command)):
            total += times.get(current, 0.0)
        stack.extend(child for child, parent in parents.items() if parent == current)
    return total


def ceiling_source() -> type:
    """The data source of ``spark_arrow_ceiling`` (made on demand: pyspark is imported lazily)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from rocketq.spark.schema import message_schema

    class CeilingReader(DataSourceReader):
        def __init__(self, options: dict[str, str]) -> None:
            self.path = options["path"]
            self.tasks = int(options["tasks"])
            self.rows = int(options["rows"])
            self.batch_size = int(options["batchsize"])

        def partitions(self) -> list[InputPartition]:
            return [InputPartition(task) for task in range(self.tasks)]

        def read(self, partition: InputPartition) -> Iterator[Any]:
            from rocketq.client.columns import arrow_memory, filled_batch

            with StoreReader(self.path, check_crc=False) as reader:
                low, high = reader.offset_range(TOPIC, 0)
                end = min(high, low + self.batch_size)
                filled = next(reader.read(TOPIC, 0, low, end, max_records=self.batch_size, allocate=arrow_memory))
                batch = filled_batch(filled, broker_name="b")
            rows = self.rows // self.tasks + (partition.value < self.rows % self.tasks)
            while rows > 0:
                yield batch.slice(0, rows)
                rows -= batch.num_rows

    class CeilingSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "rocketq-bench-arrow-ceiling"

        def schema(self) -> Any:
            return message_schema(False)

        def reader(self, schema: Any) -> CeilingReader:
            return CeilingReader(dict(self.options))

    return CeilingSource


def local_spark(app_name: str, extra_conf: dict[str, str]) -> Any:
    """A ``local[2]`` session for a bench: no UI, loopback only, Python workers running this interpreter,
    ``extra_conf`` on top."""
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for key, value in extra_conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


@contextmanager
def spark_session(extra_conf: dict[str, str]) -> Iterator[Any]:
    """``local_spark`` with the offline reader and the in-memory ceiling registered."""
    from rocketq.spark.store_source import StoreDataSource

    session = local_spark("rocketq-bench-spark-store", extra_conf)
    session.dataSource.register(StoreDataSource)
    session.dataSource.register(ceiling_source())
    try:
        yield session
    finally:
        session.stop()


def alternating_runs(actions: Sequence[Callable[[], object]], runs: int) -> list[tuple[list[float], list[float]]]:
    """Wall-clock seconds and process-tree CPU-seconds of ``runs`` calls of each action, taken in turn
    (one of each, then again) so that every action sees the same minutes of a shared host; each action
    is called once first (the warm-up: workers started, kernels loaded)."""
    for action in actions:
        action()
    measured: list[tuple[list[float], list[float]]] = [([], []) for _ in actions]
    for _ in range(runs):
        for action, (walls, cpus) in zip(actions, measured, strict=True):
            cpu_before, began = tree_cpu_seconds(os.getpid()), time.perf_counter()
            action()
            walls.append(time.perf_counter() - began)
            cpus.append(tree_cpu_seconds(os.getpid()) - cpu_before)
    return measured


def spark_measurements(
    session: Any, root: Path, size: int, count: int, stored: int, options: SparkStoreBenchOptions
) -> list[Measurement]:
    """The reader with and without CRC checks and its ceiling, runs alternating; the ceiling has the
    reader's shape: as many tasks as the reader plans, batches of as many rows as the reader's."""
    from rocketq.spark.store_source import DEFAULT_BATCH_SIZE

    batch_size = options.batch_size or DEFAULT_BATCH_SIZE

    def measurement(name: str, walls: list[float], cpus: list[float], **notes: str | int) -> Measurement:
        extra: dict[str, float | int | str | None] = {
            "best_per_s": count / min(walls),
            "cpu_s": statistics.median(cpus),
            "us_per_msg": statistics.median(cpus) / count * 1e6,
            "batch_size": batch_size,
            **notes,
        }
        return Measurement.from_counts(name, size, count, statistics.median(walls), stored, extra=extra)

    def noop(frame: Any) -> None:
        frame.write.format("noop").mode("overwrite").save()

    def store_frame(check_crc: bool) -> Any:
        reader = session.read.format("rocketmq-store").option("topic", TOPIC).option("checkCrc", str(check_crc).lower())
        if options.batch_size is not None:
            reader = reader.option("batchSize", str(options.batch_size))
        return reader.load(str(root))

    tasks = store_frame(False).rdd.getNumPartitions()
    ceiling_frame = (
        session.read.format("rocketq-bench-arrow-ceiling")
        .option("tasks", str(tasks))
        .option("rows", str(count))
        .option("batchSize", str(batch_size))
        .load(str(root))
    )
    frames = [ceiling_frame, store_frame(True), store_frame(False)]
    timed = alternating_runs([functools.partial(noop, frame) for frame in frames], options.runs)
    ceiling = measurement("spark_arrow_ceiling", *timed[0], tasks=tasks)
    results = [ceiling]
    for check_crc, (walls, cpus) in zip((True, False), timed[1:], strict=True):
        read = measurement("spark_store_read", walls, cpus, check_crc=str(check_crc).lower(), tasks=tasks)
        read.extra["vs_ceiling"] = read.msgs_per_s / ceiling.msgs_per_s
        results.append(read)
    return results


def run_spark_store_bench(options: SparkStoreBenchOptions, emit: Sink) -> list[Measurement]:
    """Every measurement (see the module docstring), each handed to ``emit`` as it is taken."""
    results: list[Measurement] = []

    def report(measurements: list[Measurement]) -> None:
        for measurement in measurements:
            emit(measurement)
        results.extend(measurements)

    scratch = Path(tempfile.mkdtemp(prefix="rocketq-bench-spark-store-", dir=options.directory))
    try:
        stores = []
        for size in options.sizes:
            root = scratch / f"store-{size}"
            stored = write_store(root, size, options.messages)
            report(decode_measurements(root, size, options.runs))
            stores.append((root, size, stored))
        if options.spark:
            with spark_session(options.extra_conf) as session:
                for root, size, stored in stores:
                    report(spark_measurements(session, root, size, options.messages, stored, options))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return results


def main(argv: Sequence[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m rocketq.bench.spark_store", description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=DEFAULT_MESSAGES, help="messages per store")
    parser.add_argument("--size", type=int, action="append", help="body size in bytes (repeatable; 100 and 1024)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per measurement")
    parser.add_argument("--batch-size", type=int, default=None, help="the source's batchSize option (default: its own)")
    parser.add_argument("--dir", type=Path, default=None, help="scratch directory parent")
    parser.add_argument("--no-spark", action="store_true", help="only the decode measurements")
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting for the session (repeatable)"
    )
    parser.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    args = parser.parse_args(argv)
    options = SparkStoreBenchOptions(
        sizes=tuple(args.size or (100, 1024)),
        messages=args.messages,
        runs=args.runs,
        batch_size=args.batch_size,
        directory=args.dir,
        spark=not args.no_spark,
        extra_conf={key: value for key, _, value in (setting.partition("=") for setting in args.conf)},
    )
    if not args.json:
        print(f"{options.messages:,} messages a store, {QUEUES} queues; MB = {MB:,} bytes of stored records")
        print(table_header())
    run_spark_store_bench(options, lambda m: print(m.to_json() if args.json else table_row(m), flush=True))


if __name__ == "__main__":
    main()
