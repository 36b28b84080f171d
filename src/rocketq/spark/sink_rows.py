"""What the ``rocketmq`` sink accepts and how a row becomes a message. No Spark session needed.

Columns (names case-insensitive; any other column is refused, naming it):

===========  ==========================  ==============================================================
column       type                        meaning
===========  ==========================  ==============================================================
body         binary or string            the message body (required; strings are sent as UTF-8)
topic        string                      where the row goes, unless the ``topic`` option is set
tags         string                      the message's tag
keys         string or array<string>     its keys (a string holds them separated by spaces)
properties   map<string, string>         user properties
queueId      int                         send to this queue (else the producer spreads the rows)
brokerName   string                      the queue's broker; needed with ``queueId`` when the topic has
                                         queues on several brokers
===========  ==========================  ==============================================================

Every message gets the deterministic unique key ``<prefix>-<seq>`` as its ``UNIQ_KEY`` property (its
``msgId`` when read back): the same row of the same micro-batch and partition gets the same key when
Spark runs it again, so consumers can drop what a retried task or a replayed batch sent twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    MapType,
    ShortType,
    StringType,
    StructType,
)

from rocketq.client.message import Message
from rocketq.common.message import Property

_STRING = StringType()
ACCEPTED: Final[dict[str, tuple[str, tuple[DataType, ...]]]] = {
    "body": ("binary or string", (BinaryType(), _STRING)),
    "topic": ("string", (_STRING,)),
    "tags": ("string", (_STRING,)),
    "keys": ("string or array<string>", (_STRING, ArrayType(_STRING, True), ArrayType(_STRING, False))),
    "properties": ("map<string,string>", (MapType(_STRING, _STRING, True), MapType(_STRING, _STRING, False))),
    "queueId": ("int", (IntegerType(), ShortType())),
    "brokerName": ("string", (_STRING,)),
}
_CANONICAL: Final = {name.lower(): name for name in ACCEPTED}


class SinkSchemaError(ValueError):
    """The DataFrame written has a column the sink does not take, or a column of the wrong type."""


def check_schema(schema: StructType, topic_option: str | None) -> dict[str, str]:
    """The written frame's columns by their canonical names (``queueId``), checked; the values are the
    frame's own spellings."""
    found: dict[str, str] = {}
    for column in schema.fields:
        canonical = _CANONICAL.get(column.name.lower())
        if canonical is None:
            raise SinkSchemaError(
                f"the rocketmq sink does not take column {column.name!r}; it takes {', '.join(ACCEPTED)}"
                " (select only those, or pack other data into body or properties)"
            )
        described, types = ACCEPTED[canonical]
        if column.dataType not in types:
            raise SinkSchemaError(f"column {column.name!r} must be {described}, not {column.dataType.simpleString()}")
        found[canonical] = column.name
    if "body" not in found:
        raise SinkSchemaError("the rocketmq sink needs a body column (binary or string)")
    if topic_option is None and "topic" not in found:
        raise SinkSchemaError("give the topic option, or a topic column")
    if "brokerName" in found and "queueId" not in found:
        raise SinkSchemaError("column 'brokerName' is used with a queueId column only")
    return found


@dataclass(frozen=True, slots=True)
class Target:
    """Where a message goes: a topic, and a queue when the row names one."""

    topic: str
    broker: str | None = None
    queue_id: int | None = None


def row_messages(
    batch: pa.RecordBatch, columns: dict[str, str], topic_option: str | None, key_prefix: str, first_seq: int
) -> dict[Target, list[Message]]:
    """The messages of ``batch``'s rows by where they go, in row order, each with its unique key
    ``<key_prefix><seq>``."""
    count = batch.num_rows
    absent: list[Any] = [None] * count

    def values(name: str) -> list[Any]:
        return batch.column(columns[name]).to_pylist() if name in columns else absent

    bodies = values("body")
    if batch.schema.field(columns["body"]).type in (pa.string(), pa.large_string()):
        bodies = [body.encode() if body is not None else None for body in bodies]
    if None in bodies:
        raise SinkSchemaError(f"row {first_seq + bodies.index(None)} of this task has a null body")
    topics = [topic_option] * count if topic_option else values("topic")
    if None in topics or "" in topics:
        missing = topics.index(None) if None in topics else topics.index("")
        raise SinkSchemaError(
            f"row {first_seq + missing} of this task has no topic (a null topic column, no topic option)"
        )
    properties = values("properties")
    extras = [dict(entries) if entries else {} for entries in properties]
    for seq, extra in enumerate(extras, first_seq):
        extra[Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = f"{key_prefix}{seq}"
    messages = [
        Message(topic, body, tags=tags, keys=keys, properties=extra)
        for topic, body, tags, keys, extra in zip(topics, bodies, values("tags"), values("keys"), extras, strict=True)
    ]
    queue_ids = values("queueId")
    if queue_ids is absent and len(set(topics)) == 1:  # the usual case: one topic, the producer picks queues
        return {Target(topics[0]): messages}
    brokers = values("brokerName")
    groups: dict[Target, list[Message]] = {}
    for topic, queue_id, broker, message in zip(topics, queue_ids, brokers, messages, strict=True):
        target = Target(topic, broker if queue_id is not None else None, queue_id)
        groups.setdefault(target, []).append(message)
    return groups
