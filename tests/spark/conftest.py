"""The Spark tests' session: one local SparkSession for the whole test run (4-6 s to start), and one
cluster (a NameServer and two brokers, in this process) whose topics each test makes for itself.

Every test in this folder is marked ``spark``: ``make test`` runs them once, in the plain Python pass.
Spark's Python workers run this interpreter (``PYSPARK_PYTHON``), where rocketq is installed, so they
import the data sources by name.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.testing import ThreadedCluster

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

HERE = Path(__file__).resolve().parent
FAST_START = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
BROKER_FIELDS = {field.name for field in dataclasses.fields(BrokerConfig)}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(HERE):
            item.add_marker(pytest.mark.spark)


def spark_builder(master: str, app: str) -> SparkSession.Builder:
    """A small Spark application for tests: no UI, loopback only, one shuffle partition."""
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.driver.extraJavaOptions", FAST_START)  # the C1 compiler only, a simple GC: starts faster
    )


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # local[2,2]: a failed task is run once more, as on a cluster (plain local[2] never retries)
    session = spark_builder("local[2,2]", "rocketq-tests").getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    from rocketq.spark import register

    register(session)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    # SQL92 filters are off by default, as in RocketMQ; brokers that have them here filter sqlFilter reads
    sql92 = {"enable_property_filter": True} if "enable_property_filter" in BROKER_FIELDS else {}
    with ThreadedCluster(tmp_path_factory.mktemp("cluster"), brokers=2, **sql92) as running:
        yield running
