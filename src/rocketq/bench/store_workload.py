"""The messages ``rocketq bench store`` appends: bodies of a given size with unique keys, as
``MessageToStore`` objects or as the SEND_BATCH_MESSAGE bodies a producer would send."""

from __future__ import annotations

import os
from collections.abc import Sequence

from rocketq.broker.send_request import stored_properties_suffix
from rocketq.common.message import encode_properties
from rocketq.common.record import record_size
from rocketq.protocol.batch import BatchItem, encode_batch
from rocketq.store.results import BatchToStore, MessageToStore

TOPIC = "BenchTopic"
QUEUES = 8


def build_messages(size: int, count: int, start: int = 0, prefix: str | None = None) -> list[MessageToStore]:
    """``count`` bench messages with ``size``-byte bodies, unique KEYS and 32-hex-digit UNIQ_KEYs."""
    prefix = prefix or os.urandom(8).hex().upper()
    body = b"x" * size
    return [
        MessageToStore(
            topic=TOPIC,
            queue_id=i % QUEUES,
            body=body,
            properties=encode_properties({"TAGS": "TagA", "KEYS": f"k{i}", "UNIQ_KEY": f"{prefix}{i:016X}"}),
        )
        for i in range(start, start + count)
    ]


BROKER_SUFFIX = stored_properties_suffix("DefaultCluster")
"""The properties a broker of the default cluster adds to every stored message."""


def build_wire_batches(messages: Sequence[MessageToStore], batch: int) -> list[BatchToStore]:
    """The messages as SEND_BATCH_MESSAGE bodies of ``batch`` items, the n-th batch for queue n % QUEUES,
    stored with the broker's properties."""
    return [
        BatchToStore(
            topic=TOPIC,
            queue_id=number % QUEUES,
            items=encode_batch([BatchItem(m.body, m.properties, m.flag) for m in messages[start : start + batch]]),
            properties_suffix=BROKER_SUFFIX,
        )
        for number, start in enumerate(range(0, len(messages), batch))
    ]


def stored_bytes(messages: Sequence[MessageToStore]) -> int:
    """CommitLog bytes the messages take (properties are ASCII here)."""
    topic_length = len(TOPIC)
    return sum(record_size(len(m.body), topic_length, len(m.properties)) for m in messages)
