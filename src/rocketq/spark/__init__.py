"""rocketq on Apache Spark: PySpark data sources that read and write rocketq topics (``rocketmq``) and
read a broker's store directory offline (``rocketmq-store``). Needs the ``rocketq[spark]`` extra.

    from rocketq.spark import register
    register(spark)
    frame = spark.read.format("rocketmq").option("nameServer", "127.0.0.1:9876").option("topic", "t").load()

See ``docs/spark.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["register"]


def register(spark: SparkSession) -> None:
    """Register the ``rocketmq`` and ``rocketmq-store`` data sources with ``spark``."""
    from rocketq.spark.source import RocketMQDataSource
    from rocketq.spark.store_source import StoreDataSource

    spark.dataSource.register(RocketMQDataSource)
    spark.dataSource.register(StoreDataSource)
