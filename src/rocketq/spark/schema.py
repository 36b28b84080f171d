"""The rows both data sources yield, one per message: the Spark schema, and the Arrow schema that Spark
checks every record batch against (``DATA_SOURCE_RETURN_SCHEMA_MISMATCH`` when they differ in a name,
a type or a nullability).

The Arrow schema is defined with the columnar decode that builds the batches
(``rocketq.client.columns.arrow_message_schema``, re-exported here); the Spark schema is built from
``pyspark.sql.types`` directly, not parsed from DDL text, so it needs no JVM. The tests check that Spark
converts the one into the other.
"""

from __future__ import annotations

import functools

from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rocketq.client.columns import PROPERTIES_COLUMN, arrow_message_schema

__all__ = ["MESSAGE_FIELDS", "PROPERTIES_COLUMN", "PROPERTIES_FIELD", "arrow_message_schema", "message_schema"]

MESSAGE_FIELDS = (
    StructField("topic", StringType(), nullable=False),
    StructField("brokerName", StringType(), nullable=False),
    StructField("queueId", IntegerType(), nullable=False),
    StructField("queueOffset", LongType(), nullable=False),
    StructField("msgId", StringType(), nullable=False),  # the UNIQ_KEY, or the offset id when there is none
    StructField("tags", StringType(), nullable=True),
    StructField("keys", StringType(), nullable=True),  # the KEYS property as sent (space-separated keys)
    StructField("body", BinaryType(), nullable=False),
    StructField("bornTimestamp", TimestampType(), nullable=False),
    StructField("storeTimestamp", TimestampType(), nullable=False),
    StructField("reconsumeTimes", IntegerType(), nullable=False),
)
PROPERTIES_FIELD = StructField(
    PROPERTIES_COLUMN, MapType(StringType(), StringType(), valueContainsNull=False), nullable=False
)


@functools.cache
def message_schema(include_properties: bool = False) -> StructType:
    """The Spark schema of a message row; with ``include_properties``, a last ``properties`` map column
    (every property as stored, TAGS, KEYS and UNIQ_KEY included)."""
    fields = [*MESSAGE_FIELDS, PROPERTIES_FIELD] if include_properties else list(MESSAGE_FIELDS)
    return StructType(fields)
