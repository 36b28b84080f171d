"""Half messages, the messages a commit makes visible, and op messages, as property texts and store
inputs: pure functions, no I/O.

A half message keeps the producer's properties, then the broker's (region, trace switch, cluster),
then the transaction's own (``PGROUP``, a transaction group's id and part, ``CHECK_IMMUNITY_TIME_IN_
SECONDS``) and last the three a commit removes: ``TRAN_MSG=true``, ``REAL_TOPIC``, ``REAL_QID``. It is
stored in ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 with its transaction bits reset to NOT, so the store
treats it as any other record and no consumer of the real topic sees it. Because the removable
properties come last, a commit cuts them off the text instead of decoding and re-encoding it
(``committed_properties``; any other layout takes the decoding path, with the same result).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Final

from rocketq.common.message import (
    CHECK_MAX_TOPIC,
    HALF_TOPIC,
    NAME_VALUE_SEPARATOR,
    OP_TOPIC,
    PROPERTY_SEPARATOR,
    Property,
    decode_properties,
    encode_properties,
    find_property,
)
from rocketq.common.record import StoredRecord, SysFlag
from rocketq.protocol import ResponseCode
from rocketq.store import MessageToStore

from .ranges import Range, encode_op_body

HALF_QUEUE_ID: Final = 0
OP_QUEUE_ID: Final = 0
OP_TAG: Final = "d"  # RocketMQ's REMOVETAG
OP_KIND: Final = "TRAN_OP"  # rocketq: "commit" or "rollback"
OP_VISIBLE: Final = "TRAN_OP_VISIBLE"  # rocketq: how many committed messages follow a commit op in its put
OP_SKIP: Final = "TRAN_OP_SKIP"  # rocketq: of the first half message listed, the messages visible already
COMMIT: Final = "commit"
ROLLBACK: Final = "rollback"

TRANSACTION_NAMES: Final = (  # set by the producer, kept by a commit
    Property.PRODUCER_GROUP,
    Property.TRANSACTION_GROUP_ID,
    Property.TRANSACTION_GROUP_PART,
    Property.CHECK_IMMUNITY_TIME_IN_SECONDS,
)
_REMOVED_ON_COMMIT: Final = (Property.TRANSACTION_PREPARED, Property.REAL_TOPIC, Property.REAL_QUEUE_ID)
_TAIL_START: Final = (
    f"{PROPERTY_SEPARATOR}{Property.TRANSACTION_PREPARED}{NAME_VALUE_SEPARATOR}true"
    f"{PROPERTY_SEPARATOR}{Property.REAL_TOPIC}{NAME_VALUE_SEPARATOR}"
)
_REAL_QID_AT: Final = f"{PROPERTY_SEPARATOR}{Property.REAL_QUEUE_ID}{NAME_VALUE_SEPARATOR}"
_MARKERS: Final = tuple(name + NAME_VALUE_SEPARATOR for name in _REMOVED_ON_COMMIT)


@dataclass(frozen=True, slots=True, init=False)
class HalfInfo:
    """What the broker needs to know of a half message, read from its properties."""

    producer_group: str
    group_id: str | None  # a grouped transaction's id (rocketq), None for a check-back transaction
    part: str | None
    immunity_s: int | None  # CHECK_IMMUNITY_TIME_IN_SECONDS, when the producer set a valid one

    def __init__(  # written out: see rocketq.native.modules (one per half message)
        self, producer_group: str, group_id: str | None, part: str | None, immunity_s: int | None
    ) -> None:
        object.__setattr__(self, "producer_group", producer_group)
        object.__setattr__(self, "group_id", group_id)
        object.__setattr__(self, "part", part)
        object.__setattr__(self, "immunity_s", immunity_s)


def half_info(properties: str) -> HalfInfo:
    immunity = find_property(properties, Property.CHECK_IMMUNITY_TIME_IN_SECONDS)
    return HalfInfo(
        producer_group=find_property(properties, Property.PRODUCER_GROUP) or "",
        group_id=find_property(properties, Property.TRANSACTION_GROUP_ID),
        part=find_property(properties, Property.TRANSACTION_GROUP_PART),
        immunity_s=int(immunity) if immunity is not None and immunity.isdigit() else None,
    )


def make_half(properties: dict[str, str], topic: str, queue_id: int) -> tuple[str, int]:
    """Turn a message's properties (the broker's already set) into its half message's, in place: no
    delay (a transactional message is never delayed), the transaction's properties last; returns where
    the half message is stored."""
    for name in (*_REMOVED_ON_COMMIT, Property.DELAY_TIME_LEVEL):
        properties.pop(name, None)
    for name in TRANSACTION_NAMES:
        value = properties.pop(name, None)
        if value:
            properties[name] = value
    properties[Property.TRANSACTION_PREPARED] = "true"
    properties[Property.REAL_TOPIC] = topic
    properties[Property.REAL_QUEUE_ID] = str(queue_id)
    return HALF_TOPIC, HALF_QUEUE_ID


def transaction_of_batch(header_properties: str) -> dict[str, str] | None:
    """The transaction properties of a batch whose request header marks it transactional
    (``TRAN_MSG=true`` among the header's properties: a rocketq transactional batch), else None."""
    if find_property(header_properties, Property.TRANSACTION_PREPARED) != "true":
        return None
    properties = decode_properties(header_properties)
    names = (Property.TRANSACTION_PREPARED, *TRANSACTION_NAMES)
    return {name: properties[name] for name in names if properties.get(name)}


def batch_transaction_problem(transaction: dict[str, str], dead_letter: bool, rejected: bool) -> tuple[int, str] | None:
    """(response code, remark) refusing a transactional batch, or None when it may be stored."""
    if rejected:
        return ResponseCode.NO_PERMISSION, "this broker rejects transactional messages"
    if dead_letter:
        return ResponseCode.MESSAGE_ILLEGAL, "a transactional batch cannot go to a dead-letter topic"
    if not transaction.get(Property.TRANSACTION_GROUP_ID) or not transaction.get(Property.PRODUCER_GROUP):
        return ResponseCode.MESSAGE_ILLEGAL, "a transactional batch names its producer group and transaction group"
    return None


def committed_properties(properties: str) -> tuple[str, str, int] | None:
    """(properties, real topic, real queue id) of the message a commit makes of a half message with
    these properties: ``TRAN_MSG``, ``REAL_TOPIC`` and ``REAL_QID`` removed. None when it names no
    real topic."""
    tail_at = properties.rfind(_TAIL_START)
    if tail_at >= 0:
        qid_at = properties.find(_REAL_QID_AT, tail_at + len(_TAIL_START))
        if qid_at > 0:
            topic = properties[tail_at + len(_TAIL_START) : qid_at]
            queue = properties[qid_at + len(_REAL_QID_AT) :].rstrip(PROPERTY_SEPARATOR)
            head = properties[:tail_at]
            if queue.isdigit() and topic and PROPERTY_SEPARATOR not in topic and not _names_any(head):
                return head, topic, int(queue)
    decoded = decode_properties(properties)  # another layout: decode, remove, encode
    decoded.pop(Property.TRANSACTION_PREPARED, None)
    topic = decoded.pop(Property.REAL_TOPIC, "")
    queue = decoded.pop(Property.REAL_QUEUE_ID, "0")
    if not topic:
        return None
    return encode_properties(decoded), topic, int(queue) if queue.isdigit() else 0


def _names_any(text: str) -> bool:
    return any(marker in text for marker in _MARKERS)


def committed_message(half: StoredRecord) -> MessageToStore | None:
    """The visible message a commit stores for ``half``: its real topic and queue, the commit type,
    ``prepared_transaction_offset`` = the half message's CommitLog offset. None when the half names no
    real topic."""
    committed = committed_properties(half.properties)
    if committed is None:
        return None
    properties, topic, queue_id = committed
    return MessageToStore(
        topic=topic,
        queue_id=queue_id,
        body=half.body,
        properties=properties,
        flag=half.flag,
        sys_flag=(half.sys_flag & ~SysFlag.TRANSACTION_MASK) | SysFlag.TRANSACTION_COMMIT_TYPE,
        born_timestamp=half.born_timestamp,
        born_host=half.born_host,
        store_host=half.store_host,
        reconsume_times=half.reconsume_times,
        prepared_transaction_offset=half.physical_offset,
    )


def check_max_copy(half: StoredRecord) -> MessageToStore:
    """The copy of a half message rolled back after its last unanswered check (``TRANS_CHECK_MAX_TIME_TOPIC``
    queue 0; its properties still name the real topic)."""
    return MessageToStore(
        topic=CHECK_MAX_TOPIC,
        queue_id=0,
        body=half.body,
        properties=half.properties,
        flag=half.flag,
        sys_flag=half.sys_flag & ~SysFlag.TRANSACTION_MASK,
        born_timestamp=half.born_timestamp,
        born_host=half.born_host,
        store_host=half.store_host,
        reconsume_times=half.reconsume_times,
    )


def op_message(
    ranges: list[Range],
    *,
    commit: bool,
    visible: int = 0,
    skip: int = 0,
    group: tuple[str, str] | None = None,
    store_host: bytes,
    born_timestamp: int,
) -> MessageToStore:
    """An op message settling the half messages at ``ranges`` (half-queue offsets). A commit op is
    followed, in the same put, by the ``visible`` messages it makes visible, in the order it lists
    the half messages (the first one's without its first ``skip``); ``group`` (producer group, group
    id) marks the commit of a grouped transaction."""
    return MessageToStore(
        topic=OP_TOPIC,
        queue_id=OP_QUEUE_ID,
        body=encode_op_body(ranges),
        properties=_op_properties(commit, visible, skip, group),
        born_timestamp=born_timestamp,
        born_host=store_host,
        store_host=store_host,
    )


@functools.lru_cache(maxsize=64)  # a check-back transaction's two ops are always the same
def _op_properties(commit: bool, visible: int, skip: int, group: tuple[str, str] | None) -> str:
    properties = {Property.TAGS: OP_TAG, OP_KIND: COMMIT if commit else ROLLBACK}
    if commit:
        properties[OP_VISIBLE] = str(visible)
    if skip:
        properties[OP_SKIP] = str(skip)
    if group is not None:
        properties[Property.PRODUCER_GROUP], properties[Property.TRANSACTION_GROUP_ID] = group
    return encode_properties(properties)


@dataclass(frozen=True, slots=True)
class OpInfo:
    """An op message read back: the offsets it settled and what it was."""

    commit: bool
    visible: int  # committed messages stored after the op in its put
    skip: int  # of the first half message listed, the messages made visible before
    group: tuple[str, str] | None


def op_info(properties: str) -> OpInfo:
    visible = find_property(properties, OP_VISIBLE) or "0"
    skip = find_property(properties, OP_SKIP) or "0"
    group_id = find_property(properties, Property.TRANSACTION_GROUP_ID)
    group = (find_property(properties, Property.PRODUCER_GROUP) or "", group_id) if group_id else None
    return OpInfo(
        commit=find_property(properties, OP_KIND) == COMMIT,
        visible=int(visible) if visible.isdigit() else 0,
        skip=int(skip) if skip.isdigit() else 0,
        group=group,
    )


def checked_record(half: StoredRecord, checks: int) -> StoredRecord:
    """The half message as CHECK_TRANSACTION_STATE carries it: its real topic and queue restored and
    ``TRANSACTION_CHECK_TIMES`` set (the caller encodes it; its size is recomputed then)."""
    properties = decode_properties(half.properties)
    properties[Property.TRANSACTION_CHECK_TIMES] = str(checks)
    queue = properties.get(Property.REAL_QUEUE_ID, "0")
    return StoredRecord(
        total_size=0,
        magic_code=half.magic_code,
        body_crc=half.body_crc,
        queue_id=int(queue) if queue.isdigit() else 0,
        flag=half.flag,
        queue_offset=half.queue_offset,
        physical_offset=half.physical_offset,
        sys_flag=half.sys_flag,
        born_timestamp=half.born_timestamp,
        born_host=half.born_host,
        store_timestamp=half.store_timestamp,
        store_host=half.store_host,
        reconsume_times=half.reconsume_times,
        prepared_transaction_offset=half.prepared_transaction_offset,
        body=half.body,
        topic=properties.get(Property.REAL_TOPIC, half.topic),
        properties=encode_properties(properties),
    )
