"""A streaming pipeline: orders in, per-region statistics per minute out.

Reads the ``orders`` topic (JSON bodies, the region as the tag), counts the orders and sums their amounts
per region and one-minute window of the orders' own event time, waits two minutes for late orders
(the watermark), and writes each finished window twice: as a JSON message to the ``order-stats`` topic
and as a row of Parquet files.

    spark-submit examples/order_stats.py --name-server 127.0.0.1:9876 --out /tmp/order-stats

Stop it with Ctrl-C; started again with the same ``--out``, it goes on from its checkpoints. With
``--available-now`` it reads what is there, writes what is final, and stops.
"""

from __future__ import annotations

import argparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

import rocketq.spark

ORDER = StructType(
    [
        StructField("orderId", StringType()),
        StructField("amount", DoubleType()),
        StructField("eventTime", StringType()),
    ]
)


def window_stats(spark: SparkSession, name_server: str, topic: str, watermark: str) -> DataFrame:
    orders = (
        spark.readStream.format("rocketmq")
        .option("nameServer", name_server)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "100000")
        .option("consumerGroup", "order-stats-pipeline")  # progress shown by rocketq admin consumerProgress
        .load()
    )
    parsed = orders.select(
        F.col("tags").alias("region"), F.from_json(F.col("body").cast("string"), ORDER).alias("order")
    ).select("region", "order.orderId", "order.amount", F.to_timestamp("order.eventTime").alias("eventTime"))
    return (
        parsed.withWatermark("eventTime", watermark)
        .groupBy(F.window("eventTime", "1 minute"), "region")
        .agg(F.count("*").alias("orders"), F.round(F.sum("amount"), 2).alias("amount"))
        .select(
            "region",
            F.col("window.start").alias("windowStart"),
            F.col("window.end").alias("windowEnd"),
            "orders",
            "amount",
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name-server", default="127.0.0.1:9876")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--stats-topic", default="order-stats")
    parser.add_argument("--out", required=True, help="directory of the Parquet files and the checkpoints")
    parser.add_argument("--watermark", default="2 minutes")
    parser.add_argument("--available-now", action="store_true", help="read what is there, then stop")
    parser.add_argument(
        "--delivery",
        choices=["atLeastOnce", "exactlyOnce"],
        default="atLeastOnce",
        help="of the order-stats messages (exactlyOnce: rocketq brokers, which have grouped transactions)",
    )
    args = parser.parse_args()

    spark = SparkSession.builder.appName("order-stats").getOrCreate()
    rocketq.spark.register(spark)
    stats = window_stats(spark, args.name_server, args.topic, args.watermark)
    trigger = {"availableNow": True} if args.available_now else {"processingTime": "10 seconds"}

    to_topic = (
        stats.select(
            F.to_json(F.struct("region", "windowStart", "windowEnd", "orders", "amount")).alias("body"),
            F.col("region").alias("tags"),
            F.date_format("windowStart", "yyyy-MM-dd'T'HH:mm").alias("keys"),
        )
        .writeStream.format("rocketmq")
        .option("nameServer", args.name_server)
        .option("topic", args.stats_topic)
        .option("deliveryGuarantee", args.delivery)
        .option("checkpointLocation", f"{args.out}/checkpoints/topic")
        .outputMode("append")
        .trigger(**trigger)
        .start()
    )
    to_files = (
        stats.writeStream.format("parquet")
        .option("path", f"{args.out}/parquet")
        .option("checkpointLocation", f"{args.out}/checkpoints/parquet")
        .outputMode("append")
        .trigger(**trigger)
        .start()
    )
    for query in (to_topic, to_files):
        query.awaitTermination()


if __name__ == "__main__":
    main()
