"""How fast Spark's Python data source API can go on this machine at all, over its settings.

Run it with ``python -m rocketq.bench.spark_ceiling [--size 100] [--rows N] [--batch 16384 --batch 65536]
[--tasks 2 --tasks 8] [--conf key=value] [--columns body]`` (needs the ``rocketq[spark]`` extra and a JVM).

A Python data source whose tasks yield one already built Arrow batch of the message schema (the rows of
``rocketq.bench.spark.memory_batch``: the columns and body size the sources give), sliced to the rows
asked for, into Spark's ``noop`` sink on ``local[2]``: nothing is decoded, so what is measured is the
API's own cost per row (the Python worker handing the batches to the JVM, the JVM reading them into its
rows). Every combination of ``--batch`` (rows per yielded batch) and ``--tasks`` is measured in one
session with the ``--conf`` settings; ``--columns`` selects only those columns before the sink (the data
source still yields them all: Python data sources do not prune columns). ``--schema body`` makes the
source itself yield only the binary ``body`` column, ``--schema long`` a single bigint column (the
JVM's floor per row: the narrowest row there is). One JSON line per combination:
wall-clock rate (median of ``--runs`` after a warm-up) and CPU-microseconds per row of the process tree.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

from rocketq.bench.spark import memory_batch
from rocketq.bench.spark_store import local_spark, tree_cpu_seconds
from rocketq.spark.schema import message_schema

FORMAT = "rocketq-bench-ceiling-sweep"


class SweepSource(DataSource):
    """``rows`` rows in ``tasks`` tasks, each yielding one prebuilt batch of ``batch`` rows (sliced)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        kind = self.options.get("schema", "message")
        if kind == "message":
            return message_schema(False)
        return StructType([SCHEMAS[kind]])

    def reader(self, schema: StructType) -> DataSourceReader:
        return SweepReader(dict(self.options))


SCHEMAS: dict[str, StructField] = {
    "body": StructField("body", BinaryType(), nullable=False),
    "long": StructField("value", LongType(), nullable=False),
}


def sweep_batch(kind: str, rows: int, size: int) -> pa.RecordBatch:
    """``rows`` rows of the ``--schema`` kind: the message rows, their body column alone, or a bigint."""
    batch = memory_batch(rows, size)
    if kind == "message":
        return batch
    if kind == "body":
        return pa.RecordBatch.from_arrays([batch.column("body")], schema=pa.schema([batch.schema.field("body")]))
    values = pa.array(np.arange(rows, dtype=np.int64))
    return pa.RecordBatch.from_arrays([values], schema=pa.schema([pa.field("value", pa.int64(), nullable=False)]))


class SweepReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.tasks, self.rows = int(options["tasks"]), int(options["rows"])
        self.batch, self.size = int(options["batch"]), int(options["size"])
        self.kind = options.get("schema", "message")

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(task) for task in range(self.tasks)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        batch = sweep_batch(self.kind, self.batch, self.size)
        left = self.rows // self.tasks + (partition.value < self.rows % self.tasks)
        while left > 0:
            yield batch.slice(0, min(left, self.batch))
            left -= self.batch


def session(conf: dict[str, str]) -> Any:
    spark = local_spark("rocketq-bench-spark-ceiling", conf)
    spark.dataSource.register(SweepSource)
    return spark


def measure(
    spark: Any,
    *,
    rows: int,
    size: int,
    tasks: int,
    batch: int,
    columns: Sequence[str],
    runs: int,
    schema: str = "message",
) -> dict[str, Any]:
    frame = spark.read.format(FORMAT).options(tasks=tasks, rows=rows, batch=batch, size=size, schema=schema).load()
    if columns:
        frame = frame.select(*columns)

    def run() -> None:
        frame.write.format("noop").mode("overwrite").save()

    run()  # warm-up
    walls, cpus = [], []
    for _ in range(runs):
        cpu_before, began = tree_cpu_seconds(os.getpid()), time.perf_counter()
        run()
        walls.append(time.perf_counter() - began)
        cpus.append(tree_cpu_seconds(os.getpid()) - cpu_before)
    return {
        "size": size,
        "tasks": tasks,
        "batch": batch,
        "schema": schema,
        "columns": list(columns) or "all",
        "msgs_per_s": round(rows / statistics.median(walls)),
        "best_per_s": round(rows / min(walls)),
        "cpu_us_per_row": round(statistics.median(cpus) / rows * 1e6, 2),
    }


def main(argv: Sequence[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m rocketq.bench.spark_ceiling", description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100, help="body bytes")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per run")
    parser.add_argument("--batch", type=int, action="append", help="rows per yielded batch (repeatable)")
    parser.add_argument("--tasks", type=int, action="append", help="tasks (repeatable)")
    parser.add_argument("--conf", action="append", default=[], help="a Spark setting key=value (repeatable)")
    parser.add_argument("--columns", action="append", default=[], help="select only these columns (repeatable)")
    parser.add_argument("--runs", type=int, default=2, help="timed runs per combination")
    parser.add_argument(
        "--schema", choices=("message", *SCHEMAS), default="message", help="what the source yields (see above)"
    )
    args = parser.parse_args(argv)
    conf = dict(item.split("=", 1) for item in args.conf)
    spark = session(conf)
    try:
        for tasks in args.tasks or [2]:
            for batch in args.batch or [16_384]:
                found = measure(
                    spark,
                    rows=args.rows,
                    size=args.size,
                    tasks=tasks,
                    batch=batch,
                    columns=args.columns,
                    runs=args.runs,
                    schema=args.schema,
                )
                print(json.dumps({**found, "conf": conf}), flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
