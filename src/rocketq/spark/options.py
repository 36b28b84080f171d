"""The options of the ``rocketmq`` source and sink: parsed and checked once, with an error that names the
option. Pure Python (no Spark), so every rule here is tested without a session.

Spark hands a data source its options in a case-insensitive map whose keys it stores lower-cased; the
names below are looked up the same way, so ``startingOffsets`` and ``startingoffsets`` are one option.
Names follow Spark's Kafka connector where the meaning is the same.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

from rocketq.client.selector import MessageSelector

DEFAULT_PULL_BATCH_SIZE: Final = 8192
"""Messages asked for per pull, at most. The broker also caps each answer (256 KiB by default); the
reader learns how many messages fit and asks for about that many."""
DEFAULT_MAX_PULL_BYTES: Final = 4 * 1024 * 1024
"""Bytes of records asked for per pull (rocketq brokers grant up to their ``pullBytesLimit``, 8 MiB by
default; RocketMQ's answer their own 256 KiB): a backlog read pays per pull far more than per byte."""
DEFAULT_MAX_TRIGGER_DELAY_MS: Final = 15 * 60 * 1000
DEFAULT_SEND_BATCH_SIZE: Final = 128
DEFAULT_PRODUCER_GROUP: Final = "rocketq-spark"
DEFAULT_TRANSACTION_TIMEOUT_MS: Final = 15 * 60 * 1000
"""exactlyOnce: how long a micro-batch's prepared messages wait for its commit before the brokers roll
them back (the broker's own default for grouped transactions)."""
EARLIEST: Final = -2  # in startingOffsets / endingOffsets JSON
LATEST: Final = -1

SOURCE_OPTIONS: Final = frozenset(
    {
        "nameserver",
        "topic",
        "topics",
        "subexpression",
        "sqlfilter",
        "startingoffsets",
        "startingtimestamp",
        "endingoffsets",
        "endingtimestamp",
        "maxoffsetspertrigger",
        "minoffsetspertrigger",
        "maxtriggerdelay",
        "failondataloss",
        "includeproperties",
        "consumergroup",
        "pullbatchsize",
        "maxpullbytes",
        "minpartitions",
        "requesttimeoutms",
    }
)
SINK_OPTIONS: Final = frozenset(
    {
        "nameserver",
        "topic",
        "deliveryguarantee",
        "producergroup",
        "sendbatchsize",
        "requesttimeoutms",
        "transactiontimeoutms",
    }
)
SPARK_OWN_OPTIONS: Final = frozenset({"path", "checkpointlocation", "queryname"})
"""Options Spark itself passes along with the user's (``save(path)``, ``checkpointLocation``)."""


class OptionError(ValueError):
    """An option is missing, unknown, or has a value that cannot be used."""

    def __init__(self, option: str, problem: str) -> None:
        self.option = option
        super().__init__(f"rocketmq option {option!r}: {problem}")


OffsetsJson = dict[str, dict[str, dict[str, int]]]
"""``{"topic": {"brokerName": {"queueId": offset}}}``; -2 is the earliest, -1 the latest offset."""


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """Where reading starts or ends: ``earliest``, ``latest``, given offsets per queue, or a timestamp
    (each queue's first message stored at or after it)."""

    kind: Literal["earliest", "latest", "offsets", "timestamp"]
    offsets: OffsetsJson | None = None
    timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceOptions:
    name_server: str
    topics: tuple[str, ...]
    selector: MessageSelector
    starting: OffsetSpec
    ending: OffsetSpec  # batch reads only
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    fail_on_data_loss: bool = True
    include_properties: bool = False
    consumer_group: str | None = None
    pull_batch_size: int = DEFAULT_PULL_BATCH_SIZE
    max_pull_bytes: int = DEFAULT_MAX_PULL_BYTES
    min_partitions: int | None = None
    request_timeout_s: float = 10.0

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool | None) -> SourceOptions:
        """The options of a stream (``streaming``), of a batch read, or (None) what holds for both: the
        check ``load()`` makes before Spark says which it will be."""
        found = lowered(options)
        unknown(found, SOURCE_OPTIONS)
        starting = _offset_spec(
            found, "startingOffsets", "startingTimestamp", "earliest" if streaming is False else "latest"
        )
        ending = _offset_spec(found, "endingOffsets", "endingTimestamp", "latest")
        if streaming:
            for name in ("endingOffsets", "endingTimestamp"):
                if name.lower() in found:
                    raise OptionError(name, "is for batch reads only; a stream reads on")
        elif streaming is False:
            if starting.kind == "latest":
                raise OptionError("startingOffsets", "'latest' would read nothing in a batch read")
            if ending.kind == "earliest":
                raise OptionError("endingOffsets", "'earliest' would read nothing in a batch read")
            _no_bound(starting.offsets, LATEST, "startingOffsets", "-1 (latest) would read nothing of that queue")
            _no_bound(ending.offsets, EARLIEST, "endingOffsets", "-2 (earliest) would read nothing of that queue")
            for name in ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay", "consumerGroup"):
                if name.lower() in found:
                    raise OptionError(name, "applies to streaming reads only")
        topics = _topics(found)
        for spec, name in ((starting, "startingOffsets"), (ending, "endingOffsets")):
            extra = sorted(set(spec.offsets or {}) - set(topics))
            if extra:
                raise OptionError(name, f"names topics that are not read: {extra}")
        max_rows = _positive(found, "maxOffsetsPerTrigger")
        min_rows = _positive(found, "minOffsetsPerTrigger")
        if max_rows is not None and min_rows is not None and min_rows > max_rows:
            raise OptionError("minOffsetsPerTrigger", f"{min_rows} is more than maxOffsetsPerTrigger {max_rows}")
        delay = found.get("maxtriggerdelay")
        group = found.get("consumergroup", "").strip() or None
        return cls(
            name_server=_required(found, "nameServer"),
            topics=topics,
            selector=_selector(found),
            starting=starting,
            ending=ending,
            max_offsets_per_trigger=max_rows,
            min_offsets_per_trigger=min_rows,
            max_trigger_delay_ms=(
                DEFAULT_MAX_TRIGGER_DELAY_MS if delay is None else duration_ms(delay, "maxTriggerDelay")
            ),
            fail_on_data_loss=boolean(found, "failOnDataLoss", True),
            include_properties=boolean(found, "includeProperties", False),
            consumer_group=group,
            pull_batch_size=_positive(found, "pullBatchSize") or DEFAULT_PULL_BATCH_SIZE,
            max_pull_bytes=_positive(found, "maxPullBytes") or DEFAULT_MAX_PULL_BYTES,
            min_partitions=_positive(found, "minPartitions"),
            request_timeout_s=(_positive(found, "requestTimeoutMs") or 10_000) / 1000,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SinkOptions:
    name_server: str
    topic: str | None  # every row goes here when set (a topic column is then ignored)
    exactly_once: bool
    producer_group: str = DEFAULT_PRODUCER_GROUP
    send_batch_size: int = DEFAULT_SEND_BATCH_SIZE
    request_timeout_s: float = 10.0
    transaction_timeout_s: int = DEFAULT_TRANSACTION_TIMEOUT_MS // 1000  # exactlyOnce; whole seconds

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SinkOptions:
        found = lowered(options)
        unknown(found, SINK_OPTIONS)
        guarantee = found.get("deliveryguarantee", "atLeastOnce").strip()
        if guarantee.lower() not in ("atleastonce", "exactlyonce"):
            raise OptionError("deliveryGuarantee", f"must be atLeastOnce or exactlyOnce, not {guarantee!r}")
        topic = found.get("topic", "").strip() or None
        exactly_once = guarantee.lower() == "exactlyonce"
        timeout_ms = _positive(found, "transactionTimeoutMs")
        if timeout_ms is not None and not exactly_once:
            raise OptionError("transactionTimeoutMs", "applies to deliveryGuarantee=exactlyOnce only")
        if timeout_ms is not None and timeout_ms < 1000:
            raise OptionError(
                "transactionTimeoutMs", f"must be at least 1000 (brokers count whole seconds), not {timeout_ms}"
            )
        return cls(
            name_server=_required(found, "nameServer"),
            topic=topic,
            exactly_once=exactly_once,
            producer_group=found.get("producergroup", "").strip() or DEFAULT_PRODUCER_GROUP,
            send_batch_size=_positive(found, "sendBatchSize") or DEFAULT_SEND_BATCH_SIZE,
            request_timeout_s=(_positive(found, "requestTimeoutMs") or 10_000) / 1000,
            transaction_timeout_s=-(-(timeout_ms or DEFAULT_TRANSACTION_TIMEOUT_MS) // 1000),
        )


def lowered(options: Mapping[str, str]) -> dict[str, str]:
    """The options keyed by lower-cased name (as Spark stores them)."""
    return {str(key).lower(): str(value) for key, value in options.items()}


def unknown(found: Mapping[str, str], known: frozenset[str]) -> None:
    """A misspelt option fails rather than being ignored."""
    extra = sorted(set(found) - known - SPARK_OWN_OPTIONS)
    if extra:
        raise OptionError(extra[0], f"is not an option of this data source (known: {', '.join(sorted(known))})")


def boolean(found: Mapping[str, str], name: str, default: bool) -> bool:
    value = found.get(name.lower())
    if value is None:
        return default
    if value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise OptionError(name, f"must be true or false, not {value!r}")


def _required(found: Mapping[str, str], name: str) -> str:
    value = found.get(name.lower(), "").strip()
    if not value:
        raise OptionError(name, "is required")
    return value


def _positive(found: Mapping[str, str], name: str) -> int | None:
    value = found.get(name.lower())
    if value is None:
        return None
    try:
        number = int(value.strip())
    except ValueError:
        raise OptionError(name, f"must be a whole number, not {value!r}") from None
    if number < 1:
        raise OptionError(name, f"must be at least 1, not {number}")
    return number


def _topics(found: Mapping[str, str]) -> tuple[str, ...]:
    if "topic" in found and "topics" in found:
        raise OptionError("topics", "give topic or topics, not both")
    name = "topics" if "topics" in found else "topic"
    topics = tuple(dict.fromkeys(t.strip() for t in found.get(name, "").split(",") if t.strip()))
    if not topics:
        raise OptionError("topic", "is required (or topics: a comma-separated list)")
    return topics


def _selector(found: Mapping[str, str]) -> MessageSelector:
    tags, sql = found.get("subexpression", "").strip(), found.get("sqlfilter", "").strip()
    if tags and sql:
        raise OptionError("sqlFilter", "give subExpression or sqlFilter, not both")
    if "sqlfilter" in found and not sql:
        raise OptionError("sqlFilter", "is empty")
    return MessageSelector.by_sql(sql) if sql else MessageSelector.by_tag(tags or "*")


def _offset_spec(found: Mapping[str, str], offsets_name: str, timestamp_name: str, default: str) -> OffsetSpec:
    stamp = found.get(timestamp_name.lower())
    if stamp is not None:  # a timestamp wins over offsets, as in Kafka's connector
        try:
            milliseconds = int(stamp.strip())
        except ValueError:
            raise OptionError(timestamp_name, f"must be milliseconds since the epoch, not {stamp!r}") from None
        if milliseconds < 0:
            raise OptionError(timestamp_name, f"must be 0 or more, not {milliseconds}")
        return OffsetSpec("timestamp", timestamp_ms=milliseconds)
    text = found.get(offsets_name.lower(), default).strip()
    if text.lower() in ("earliest", "latest"):
        return OffsetSpec("earliest" if text.lower() == "earliest" else "latest")
    if not text.startswith("{"):
        raise OptionError(offsets_name, f"must be earliest, latest or JSON offsets per queue, not {text!r}")
    return OffsetSpec("offsets", offsets=parse_offsets_json(text, offsets_name))


def parse_offsets_json(text: str, option: str) -> OffsetsJson:
    """``{"topic": {"broker": {"queueId": offset}}}`` checked: offsets are -2, -1 or 0 and more."""
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise OptionError(option, f"is not valid JSON: {exc}") from None
    example = '{"topic": {"broker-a": {"0": 42, "1": -2}}}'
    if not isinstance(document, dict):
        raise OptionError(option, f"must be a JSON object like {example}")
    parsed: OffsetsJson = {}
    for topic, brokers in document.items():
        if not isinstance(brokers, dict):
            raise OptionError(option, f"topic {topic!r} must map broker names to queues, like {example}")
        for broker, queues in brokers.items():
            if not isinstance(queues, dict):
                raise OptionError(option, f"broker {broker!r} of {topic!r} must map queue ids to offsets")
            for queue_id, offset in queues.items():
                if not re.fullmatch(r"\d+", str(queue_id)):
                    raise OptionError(option, f"queue id {queue_id!r} of {topic}@{broker} is not a number")
                if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                    raise OptionError(
                        option, f"offset {offset!r} of {topic}@{broker}:{queue_id} must be -2, -1 or >= 0"
                    )
                parsed.setdefault(str(topic), {}).setdefault(str(broker), {})[str(int(queue_id))] = offset
    return parsed


def _no_bound(offsets: OffsetsJson | None, value: int, option: str, problem: str) -> None:
    for topic, brokers in (offsets or {}).items():
        for broker, queues in brokers.items():
            for queue_id, offset in queues.items():
                if offset == value:
                    raise OptionError(option, f"{topic}@{broker}:{queue_id}: {problem}")


_UNITS_MS: Final = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def duration_ms(text: str, option: str) -> int:
    """``"15m"``, ``"30s"``, ``"500ms"``, ``"1h"``, ``"2d"`` or plain milliseconds, as Spark writes them."""
    match = re.fullmatch(r"\s*(\d+)\s*(ms|s|m|min|h|d)?\s*", text.lower())
    if match is None:
        raise OptionError(option, f"must be a duration like 15m, 30s or 500ms, not {text!r}")
    return int(match.group(1)) * _UNITS_MS[match.group(2) or "ms"]
