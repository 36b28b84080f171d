"""The API ceiling sweep's source (``rocketq.bench.spark_ceiling``) yields exactly the rows asked for,
split over its tasks, in the rows' schema: otherwise its rates would not be per row."""

from __future__ import annotations

import subprocess
import sys

from pyspark.sql import SparkSession

from rocketq.bench.spark import alternating, memory_batch
from rocketq.bench.spark_ceiling import FORMAT, SweepSource, measure
from rocketq.spark.schema import arrow_message_schema, message_schema


def test_sweep_source_yields_the_rows_asked_for_in_every_task(spark: SparkSession) -> None:
    spark.dataSource.register(SweepSource)
    frame = spark.read.format(FORMAT).options(tasks=3, rows=1001, batch=100, size=10).load()
    assert frame.schema == message_schema(False)
    assert frame.rdd.getNumPartitions() == 3
    rows = frame.select("body").collect()
    assert len(rows) == 1001
    assert {bytes(row.body) for row in rows} == {b"x" * 10}

    found = measure(spark, rows=1001, size=10, tasks=3, batch=100, columns=["body"], runs=1)
    assert found["tasks"] == 3 and found["batch"] == 100 and found["columns"] == ["body"]
    assert found["msgs_per_s"] > 0 and found["cpu_us_per_row"] > 0


def test_narrow_schemas_yield_one_column_of_the_rows_asked_for(spark: SparkSession) -> None:
    spark.dataSource.register(SweepSource)
    body = spark.read.format(FORMAT).options(tasks=2, rows=301, batch=64, size=7, schema="body").load()
    assert body.columns == ["body"]
    assert [bytes(row.body) for row in body.collect()] == [b"x" * 7] * 301

    values = spark.read.format(FORMAT).options(tasks=2, rows=301, batch=64, size=7, schema="long").load()
    assert values.columns == ["value"]
    assert values.count() == 301

    found = measure(spark, rows=301, size=7, tasks=2, batch=64, columns=[], runs=1, schema="long")
    assert found["schema"] == "long" and found["cpu_us_per_row"] > 0


def test_memory_ceiling_rows_are_message_rows() -> None:
    """The ceiling's batches, built from numpy arrays, hold the values the rows would have as objects."""
    batch = memory_batch(3, 5, first=0xABC)
    batch.validate(full=True)
    assert batch.schema == arrow_message_schema(False)
    rows = batch.to_pylist()
    assert [row["msgId"] for row in rows] == [f"7F0000010000{offset:020X}" for offset in (0xABC, 0xABD, 0xABE)]
    assert [row["queueOffset"] for row in rows] == [0xABC, 0xABD, 0xABE]
    assert {(row["topic"], row["brokerName"], row["body"], row["tags"], row["keys"]) for row in rows} == {
        ("bench", "broker-a", b"xxxxx", None, None)
    }


def test_alternating_splits_the_spark_tree_cpu_into_jvm_and_python_workers(spark: SparkSession) -> None:
    """The bench's CPU split: the JVM's part is counted, apart from the skipped broker, and the JVM's and
    the Python workers' parts stay within the tree's total."""

    def job() -> None:
        spark.range(0, 3_000_000, 1, 2).selectExpr("sum(id * 7 % 13)").collect()

    # stands in for the broker: busy a tenth of the time, so that the moments between the readings of
    # the tree and of its parts add little of its CPU to either
    spin = (
        "import time\n"
        "while True:\n"
        "    t = time.perf_counter()\n"
        "    while time.perf_counter() - t < 0.002: pass\n"
        "    time.sleep(0.018)"
    )
    with subprocess.Popen([sys.executable, "-c", spin]) as busy:
        try:
            (runs,) = alternating([job], 2, busy.pid)
        finally:
            busy.kill()
    tick = 0.03  # /proc counts in clock ticks, and the readings of the tree and its parts are moments apart
    for spark_cpu, jvm_cpu, python_cpu, broker_cpu in zip(
        runs.spark_cpu, runs.jvm_cpu, runs.python_cpu, runs.broker_cpu, strict=True
    ):
        assert jvm_cpu > 0
        assert jvm_cpu + python_cpu <= spark_cpu + tick
        assert broker_cpu > 0  # the busy child's CPU is the broker's, not the Spark tree's
