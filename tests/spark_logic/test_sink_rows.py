"""The sink's columns and how rows become messages, without a Spark session."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, LongType, MapType, StringType, StructField, StructType

from rocketq.spark.sink_rows import SinkSchemaError, Target, check_schema, row_messages


def schema(*fields: tuple[str, object]) -> StructType:
    return StructType([StructField(name, kind, True) for name, kind in fields])  # type: ignore[arg-type]


def test_accepted_columns_by_canonical_name() -> None:
    found = check_schema(
        schema(
            ("BODY", StringType()),
            ("Tags", StringType()),
            ("keys", ArrayType(StringType())),
            ("queueid", IntegerType()),
        ),
        "t",
    )
    assert found == {"body": "BODY", "tags": "Tags", "keys": "keys", "queueId": "queueid"}


@pytest.mark.parametrize(
    ("fields", "topic", "message"),
    [
        ((("body", BinaryType()), ("offset", LongType())), "t", "'offset'"),
        ((("body", LongType()),), "t", "'body' must be binary or string"),
        ((("tags", StringType()),), "t", "needs a body column"),
        ((("body", BinaryType()),), None, "topic option, or a topic column"),
        ((("body", BinaryType()), ("brokerName", StringType())), "t", "with a queueId column"),
        ((("body", BinaryType()), ("properties", MapType(StringType(), IntegerType()))), "t", "map<string,string>"),
    ],
)
def test_refusals_name_the_column(fields: tuple[tuple[str, object], ...], topic: str | None, message: str) -> None:
    with pytest.raises(SinkSchemaError, match=message):
        check_schema(schema(*fields), topic)


def test_rows_become_messages_with_unique_keys() -> None:
    batch = pa.RecordBatch.from_pydict(
        {
            "body": ["a", "b"],
            "topic": ["x", "y"],
            "keys": [["k1", "k2"], None],
            "properties": pa.array([[("p", "1")], []], pa.map_(pa.string(), pa.string())),
            "queueId": pa.array([3, None], pa.int32()),
        }
    )
    columns = {"body": "body", "topic": "topic", "keys": "keys", "properties": "properties", "queueId": "queueId"}
    groups = row_messages(batch, columns, None, "q-7-2-", 10)
    assert list(groups) == [Target("x", None, 3), Target("y")]
    [first], [second] = groups.values()
    assert first.body == b"a" and first.keys == ["k1", "k2"] and first.properties == {"p": "1", "UNIQ_KEY": "q-7-2-10"}
    assert second.properties == {"UNIQ_KEY": "q-7-2-11"}
    without_queues = {name: column for name, column in columns.items() if name != "queueId"}
    forced = row_messages(batch, without_queues, "forced", "p-", 0)
    assert [(t, len(m)) for t, m in forced.items()] == [(Target("forced"), 2)]
    with pytest.raises(SinkSchemaError, match="null body"):
        row_messages(pa.RecordBatch.from_pydict({"body": pa.array([None], pa.binary())}), {"body": "body"}, "t", "", 0)
    with pytest.raises(SinkSchemaError, match="row 5 of this task has no topic"):
        row_messages(
            pa.RecordBatch.from_pydict({"body": [b"x"], "topic": pa.array([None], pa.string())}), columns, None, "", 5
        )
