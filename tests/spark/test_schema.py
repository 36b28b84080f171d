"""The message row schema: the Arrow schema the columnar decode builds its record batches with
(``rocketq.client.columns``) is the one Spark derives from the Spark schema, so Spark accepts those
batches unchanged."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import to_arrow_schema

from rocketq.client.columns import arrow_message_schema
from rocketq.spark.schema import message_schema


def one_row(include_properties: bool) -> pa.RecordBatch:
    at = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)
    columns: dict[str, list[object]] = {
        "topic": ["orders"],
        "brokerName": ["broker-a"],
        "queueId": [3],
        "queueOffset": [42],
        "msgId": ["7F00000100002A9F0000000000000000"],
        "tags": ["TagA"],
        "keys": ["k1 k2"],
        "body": [b"hello"],
        "bornTimestamp": [at],
        "storeTimestamp": [at],
        "reconsumeTimes": [0],
    }
    if include_properties:
        columns["properties"] = [[("TAGS", "TagA"), ("KEYS", "k1 k2")]]
    schema = arrow_message_schema(include_properties)
    return pa.RecordBatch.from_arrays(
        [pa.array(values, type=schema.field(name).type) for name, values in columns.items()], schema=schema
    )


def test_spark_reads_batches_of_the_arrow_schema_as_the_spark_schema(spark: SparkSession) -> None:
    for include_properties in (False, True):
        frame = spark.createDataFrame(pa.Table.from_batches([one_row(include_properties)]))
        row = frame.collect()[0]
        assert row["queueOffset"] == 42 and row["body"] == bytearray(b"hello")
        assert frame.schema == message_schema(include_properties)
        if include_properties:
            assert row["properties"] == {"TAGS": "TagA", "KEYS": "k1 k2"}


def test_arrow_schema_follows_spark_conventions() -> None:
    schema = arrow_message_schema(True)
    assert schema.field("bornTimestamp").type == pa.timestamp("us", tz="UTC")
    assert not schema.field("body").nullable and schema.field("tags").nullable
    assert schema.names[-1] == "properties" and "properties" not in arrow_message_schema(False).names


@pytest.mark.parametrize("include_properties", [False, True])
def test_spark_converts_the_spark_schema_to_the_arrow_schema(include_properties: bool) -> None:
    converted = to_arrow_schema(message_schema(include_properties), timezone="UTC")
    assert converted.equals(arrow_message_schema(include_properties), check_metadata=True)
