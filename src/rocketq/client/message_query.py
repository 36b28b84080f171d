"""The client's side of message queries: which of the brokers' answers to keep, how several brokers'
answers merge, and what a message id given without a topic can be.

Every broker of a topic is asked (each holds only the messages it stored). Their answers are filtered
again here, as every RocketMQ client does, because a broker may return messages whose key merely has
the same hash (RocketMQ's brokers do; rocketq's drop them already): a plain query keeps the messages of
the topic that list the key among their KEYS, a unique-key query those whose UNIQ_KEY is the key, and
both keep only those stored inside the asked time range (the index keeps store times to the second).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from rocketq.client.message import MessageExt
from rocketq.common.key_match import key_matches
from rocketq.common.message_id import MessageIdError, parse_offset_message_id

FAR_FUTURE_MS = 2**62
"""The end of an open time range."""


def kept(
    messages: Iterable[MessageExt], topic: str, key: str, *, unique: bool, begin_ms: int, end_ms: int
) -> list[MessageExt]:
    """The messages that answer the query: of ``topic``, holding ``key`` (as UNIQ_KEY when ``unique``,
    in KEYS when not), stored in [begin_ms, end_ms]."""
    return [
        message
        for message in messages
        if message.topic == topic
        and begin_ms <= message.store_timestamp <= end_ms
        and key_matches(message.properties_text, key, unique)
    ]


def newest_in_store_order(messages: Iterable[MessageExt], max_num: int) -> list[MessageExt]:
    """The ``max_num`` most recently stored of several brokers' messages, oldest first. Messages are
    told apart by where they are stored (store host and CommitLog offset): one found twice counts once."""
    unique: dict[tuple[str, int], MessageExt] = {}
    for message in messages:
        unique.setdefault((message.store_host, message.commit_log_offset), message)
    ordered = sorted(unique.values(), key=lambda m: (m.store_timestamp, m.store_host, m.commit_log_offset))
    return ordered[-max_num:] if max_num > 0 else []


def offset_id_address(message_id: str) -> tuple[str, int] | None:
    """(broker address, CommitLog offset) an offset message id names, or None when ``message_id`` cannot
    be one: not 32 hex digits, or a port or offset out of range. A client's id (UNIQ_KEY) is 32 hex
    digits too, but its bytes 4-7 (process id and a random number) make a port above 65535."""
    try:
        host, port, offset = parse_offset_message_id(message_id)
    except MessageIdError:
        return None
    if not 0 < port <= 0xFFFF or offset < 0 or ipaddress.IPv4Address(host).is_unspecified:
        return None
    return f"{host}:{port}", offset
