"""Transactional batches (rocketq): a batch of half messages is stored as ONE half message whose body is
the batch as it came off the wire (its items) and whose properties are the batch's transaction's, plus
``TRAN_BATCH`` = how many messages it holds. Storing it costs what storing one message costs; its
commit is a wire batch of the committed messages (``committed_batch``), written by the same compiled
append as a plain batch, or, when that append cannot take it, decoded message by message
(``batch_messages``) into records that read back the same. Pure functions, no I/O.
"""

from __future__ import annotations

import struct
from typing import Final

from rocketq.common.message import (
    PROPERTY_SEPARATOR,
    Property,
    decode_properties,
    encode_properties,
    find_property,
)
from rocketq.common.record import StoredRecord, SysFlag
from rocketq.protocol import decode_batch
from rocketq.store import BatchToStore, MessageToStore

from .half import TRANSACTION_NAMES, committed_properties

BATCH: Final = "TRAN_BATCH"  # rocketq: the number of messages a transactional batch's half message holds
_ITEM_SIZE: Final = struct.Struct(">i")
_DROPPED: Final = (
    Property.DELAY_TIME_LEVEL,  # a transactional message is never delayed
    Property.TRANSACTION_PREPARED,
    Property.REAL_TOPIC,
    Property.REAL_QUEUE_ID,
    BATCH,
)
_DEFAULTED: Final = (Property.MSG_REGION, Property.TRACE_SWITCH)  # an item's own value wins, as for a send


def own_properties(transaction: dict[str, str]) -> dict[str, str]:
    """The properties a batch's messages keep from its transaction (producer group, group id and part,
    immunity time)."""
    return {name: transaction[name] for name in TRANSACTION_NAMES if transaction.get(name)}


def commit_suffix(broker_suffix: str, transaction: dict[str, str]) -> str:
    """What a committed message of the batch gets after its own properties."""
    own = encode_properties(own_properties(transaction))
    return f"{broker_suffix}{PROPERTY_SEPARATOR}{own}" if own else broker_suffix


def half_batch_properties(
    broker_suffix: str, transaction: dict[str, str], topic: str, queue_id: int, count: int
) -> str:
    """The properties of a transactional batch's half message (the tail a commit removes last)."""
    tail = {
        BATCH: str(count),
        Property.TRANSACTION_PREPARED: "true",
        Property.REAL_TOPIC: topic,
        Property.REAL_QUEUE_ID: str(queue_id),
    }
    return f"{commit_suffix(broker_suffix, transaction)}{PROPERTY_SEPARATOR}{encode_properties(tail)}"


def batch_size(properties: str) -> int:
    """How many messages a half message holds: ``TRAN_BATCH``, or 1."""
    count = find_property(properties, BATCH)
    return int(count) if count is not None and count.isdigit() else 1


def skip_items(items: bytes, count: int) -> bytes:
    """A wire batch's items without its first ``count`` (each item starts with its total size)."""
    position = 0
    for _ in range(count):
        position += _ITEM_SIZE.unpack_from(items, position)[0]
    return items[position:]


def committed_batch(half: StoredRecord, skip: int = 0) -> BatchToStore | None:
    """The wire batch a commit stores for a transactional batch's half message (without its first
    ``skip`` messages): its real topic and queue, the commit type, the half message's CommitLog offset
    as ``prepared_transaction_offset``. None when it names no real topic."""
    committed = committed_properties(half.properties)
    if committed is None:
        return None
    head, topic, queue_id = committed
    suffix = decode_properties(head)
    suffix.pop(BATCH, None)
    return BatchToStore(
        topic=topic,
        queue_id=queue_id,
        items=skip_items(half.body, skip) if skip else half.body,
        properties_suffix=encode_properties(suffix),
        sys_flag=(half.sys_flag & ~SysFlag.TRANSACTION_MASK) | SysFlag.TRANSACTION_COMMIT_TYPE,
        born_timestamp=half.born_timestamp,
        born_host=half.born_host,
        store_host=half.store_host,
        reconsume_times=half.reconsume_times,
        prepared_transaction_offset=half.physical_offset,
    )


def batch_messages(batch: BatchToStore) -> list[MessageToStore]:
    """``batch`` message by message, for the put that cannot take it as a wire batch: each message's
    properties are its own with the suffix's set over them (a send's region and trace switch kept),
    never delayed.

    Raises:
        RemoteProtocolError: The items are malformed (the send checked them: the store is damaged).
    """
    suffix = decode_properties(batch.properties_suffix)
    messages: list[MessageToStore] = []
    for body, text, flag in decode_batch(batch.items):
        properties = decode_properties(text)
        for name in _DROPPED:
            properties.pop(name, None)
        for name, value in suffix.items():
            if name in _DEFAULTED:
                properties.setdefault(name, value)
            else:
                properties[name] = value
        messages.append(
            MessageToStore(
                topic=batch.topic,
                queue_id=batch.queue_id,
                body=body,
                properties=encode_properties(properties),
                flag=flag,
                sys_flag=batch.sys_flag,
                born_timestamp=batch.born_timestamp,
                born_host=batch.born_host,
                store_host=batch.store_host,
                reconsume_times=batch.reconsume_times,
                prepared_transaction_offset=batch.prepared_transaction_offset,
            )
        )
    return messages
