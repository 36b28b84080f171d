"""A batch job over a broker's store directory, without the broker: orders per region and hour.

Reads the CommitLog and ConsumeQueue files of ``orders`` with the ``rocketmq-store`` format (a copy of a
store, or the store of a stopped broker; every executor must see the directory) and writes the counts
as Parquet.

    spark-submit examples/store_batch.py --store ./.rocketq --out /tmp/orders-by-hour
"""

from __future__ import annotations

import argparse

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import rocketq.spark


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True, help="the broker's store root (holding commitlog/ and consumequeue/)")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--queue-ids", default=None, help="only these queues, e.g. 0,1")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    spark = SparkSession.builder.appName("orders-by-hour").getOrCreate()
    rocketq.spark.register(spark)
    reader = spark.read.format("rocketmq-store").option("path", args.store).option("topic", args.topic)
    if args.queue_ids:
        reader = reader.option("queueIds", args.queue_ids)
    orders = reader.load()
    by_hour = (
        orders.groupBy(F.col("tags").alias("region"), F.date_trunc("hour", "storeTimestamp").alias("hour"))
        .agg(F.count("*").alias("orders"), F.sum(F.length("body")).alias("bytes"))
        .orderBy("hour", "region")
    )
    by_hour.write.mode("overwrite").parquet(args.out)
    by_hour.show(truncate=False)


if __name__ == "__main__":
    main()
