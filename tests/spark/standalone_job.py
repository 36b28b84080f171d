"""The job the standalone-cluster test submits: copy a topic into another with a streaming query
(Trigger.AvailableNow); prints how many rows it copied.

    spark-submit standalone_job.py NAME_SERVER SOURCE_TOPIC TARGET_TOPIC CHECKPOINT_DIR
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession

import rocketq.spark


def main(name_server: str, source: str, target: str, checkpoint: str) -> None:
    spark = SparkSession.builder.appName("rocketq-standalone-test").getOrCreate()
    rocketq.spark.register(spark)
    frame = spark.readStream.format("rocketmq").options(
        nameServer=name_server, topic=source, startingOffsets="earliest"
    )
    query = (
        frame.load()
        .selectExpr("upper(cast(body as string)) as body", "tags", "keys")
        .writeStream.format("rocketmq")
        .options(nameServer=name_server, topic=target, checkpointLocation=checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    print(f"copied {sum(progress['numInputRows'] for progress in query.recentProgress)}")
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
