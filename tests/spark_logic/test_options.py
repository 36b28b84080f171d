"""Options of the rocketmq source and sink: parsed once, and a bad value fails naming its option."""

from __future__ import annotations

import pytest

from rocketq.client.selector import SQL92, TAG
from rocketq.spark.options import OffsetSpec, OptionError, SinkOptions, SourceOptions, duration_ms

BASE = {"nameServer": "127.0.0.1:9876", "topic": "orders"}


def source(streaming: bool = True, **options: str) -> SourceOptions:
    return SourceOptions.parse({**BASE, **options}, streaming=streaming)


def test_defaults_follow_kafka_stream_latest_batch_earliest_to_latest() -> None:
    stream = source()
    assert stream.topics == ("orders",) and stream.starting == OffsetSpec("latest")
    assert stream.selector.expression_type == TAG and stream.selector.expression == "*"
    assert stream.fail_on_data_loss and not stream.include_properties and stream.consumer_group is None
    assert stream.max_pull_bytes == 4 * 1024 * 1024  # asked of each pull (rocketq's rqMaxBytes)
    batch = source(streaming=False)
    assert batch.starting == OffsetSpec("earliest") and batch.ending == OffsetSpec("latest")
    assert source(maxPullBytes="65536").max_pull_bytes == 65536


def test_names_are_case_insensitive_as_spark_stores_them() -> None:
    parsed = SourceOptions.parse(
        {"nameserver": "h:1", "TOPICS": "a, b,a", "MaxOffsetsPerTrigger": "10", "FAILONDATALOSS": "False"},
        streaming=True,
    )
    assert parsed.topics == ("a", "b") and parsed.max_offsets_per_trigger == 10 and not parsed.fail_on_data_loss


def test_offsets_json_and_timestamps() -> None:
    parsed = source(startingOffsets='{"orders": {"broker-a": {"0": 5, "01": -2}}}')
    assert parsed.starting == OffsetSpec("offsets", offsets={"orders": {"broker-a": {"0": 5, "1": -2}}})
    both = source(startingOffsets="earliest", startingTimestamp="1700000000000")
    assert both.starting == OffsetSpec("timestamp", timestamp_ms=1_700_000_000_000)  # the timestamp wins
    ending = source(streaming=False, endingTimestamp="5")
    assert ending.ending.timestamp_ms == 5


def test_selectors() -> None:
    assert source(subExpression="A || B").selector.expression == "A || B"
    sql = source(sqlFilter="a > 5").selector
    assert sql.expression_type == SQL92 and sql.expression == "a > 5"


def test_durations() -> None:
    assert duration_ms("15m", "x") == 900_000 and duration_ms("30s", "x") == 30_000
    assert duration_ms("250", "x") == 250 and duration_ms("2h", "x") == 7_200_000
    assert source(minOffsetsPerTrigger="5", maxTriggerDelay="10s").max_trigger_delay_ms == 10_000


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"startingOffsets": "newest"}, "startingOffsets"),
        ({"startingOffsets": "{not json"}, "startingOffsets"),
        ({"startingOffsets": '{"orders": {"broker-a": {"0": -3}}}'}, "startingOffsets"),
        ({"startingOffsets": '{"orders": {"broker-a": {"x": 1}}}'}, "startingOffsets"),
        ({"startingOffsets": '{"other": {"broker-a": {"0": 1}}}'}, "startingOffsets"),
        ({"startingOffsets": '{"orders": [1]}'}, "startingOffsets"),
        ({"startingTimestamp": "yesterday"}, "startingTimestamp"),
        ({"maxOffsetsPerTrigger": "-1"}, "maxOffsetsPerTrigger"),
        ({"maxOffsetsPerTrigger": "many"}, "maxOffsetsPerTrigger"),
        ({"minOffsetsPerTrigger": "0"}, "minOffsetsPerTrigger"),
        ({"minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"}, "minOffsetsPerTrigger"),
        ({"maxTriggerDelay": "soon"}, "maxTriggerDelay"),
        ({"pullBatchSize": "0"}, "pullBatchSize"),
        ({"maxPullBytes": "0"}, "maxPullBytes"),
        ({"minPartitions": "-2"}, "minPartitions"),
        ({"failOnDataLoss": "maybe"}, "failOnDataLoss"),
        ({"subExpression": "A", "sqlFilter": "a > 1"}, "sqlFilter"),
        ({"endingOffsets": "latest"}, "endingOffsets"),
        ({"topics": "a", "topic": "b"}, "topics"),
        ({"topic": " "}, "topic"),
        ({"nameServer": ""}, "nameServer"),
        ({"startingOfsets": "earliest"}, "startingofsets"),
    ],
)
def test_a_bad_stream_option_fails_naming_it(options: dict[str, str], named: str) -> None:
    with pytest.raises(OptionError) as failed:
        SourceOptions.parse({**BASE, **options}, streaming=True)
    assert failed.value.option == named and repr(named) in str(failed.value)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"startingOffsets": "latest"}, "startingOffsets"),
        ({"endingOffsets": "earliest"}, "endingOffsets"),
        ({"endingOffsets": '{"orders": {"b": {"0": -2}}}'}, "endingOffsets"),
        ({"startingOffsets": '{"orders": {"b": {"0": -1}}}'}, "startingOffsets"),
        ({"maxOffsetsPerTrigger": "5"}, "maxOffsetsPerTrigger"),
        ({"consumerGroup": "g"}, "consumerGroup"),
    ],
)
def test_a_bad_batch_option_fails_naming_it(options: dict[str, str], named: str) -> None:
    with pytest.raises(OptionError, match=named):
        SourceOptions.parse({**BASE, **options}, streaming=False)


def test_sink_options() -> None:
    parsed = SinkOptions.parse({"nameServer": "h:1"})
    assert parsed.topic is None and not parsed.exactly_once and parsed.send_batch_size > 0
    assert SinkOptions.parse({"nameServer": "h:1", "deliveryGuarantee": "EXACTLYONCE"}).exactly_once
    with pytest.raises(OptionError, match="deliveryGuarantee"):
        SinkOptions.parse({"nameServer": "h:1", "deliveryGuarantee": "once"})
    with pytest.raises(OptionError, match="subexpression"):
        SinkOptions.parse({"nameServer": "h:1", "subExpression": "A"})
    assert SinkOptions.parse({"nameServer": "h:1", "path": "x", "checkpointLocation": "y"}).topic is None


def test_transaction_timeout() -> None:
    exactly_once = {"nameServer": "h:1", "deliveryGuarantee": "exactlyOnce"}
    assert SinkOptions.parse(exactly_once).transaction_timeout_s == 900
    assert SinkOptions.parse({**exactly_once, "transactionTimeoutMs": "60000"}).transaction_timeout_s == 60
    assert SinkOptions.parse({**exactly_once, "transactiontimeoutms": "1500"}).transaction_timeout_s == 2  # up
    with pytest.raises(OptionError, match="at least 1000"):
        SinkOptions.parse({**exactly_once, "transactionTimeoutMs": "999"})
    with pytest.raises(OptionError, match="exactlyOnce only"):
        SinkOptions.parse({"nameServer": "h:1", "transactionTimeoutMs": "60000"})
