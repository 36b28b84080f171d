"""How the admin message queries show a message: a block of headers, properties and body for people,
a JSON object for scripts.

The body is shown as text when it is printable UTF-8 (whitespace allowed), else as hex (a dump with
offsets in the text form, one hex string in JSON); ``--hex`` forces hex. JSON says which it is in
``bodyEncoding`` ("utf-8" or "hex"), so a script can always get the bytes back.
"""

from __future__ import annotations

from typing import Any

from rocketq.admin.render import timestamp
from rocketq.client.message import MessageExt
from rocketq.common.message import SCHEDULE_TOPIC, Property

HEX_DUMP_WIDTH = 16
_WHITESPACE = frozenset("\n\r\t")


def body_text(body: bytes, *, force_hex: bool = False) -> str | None:
    """The body as text when it is printable UTF-8 and hex is not forced, else None."""
    if force_hex:
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if any(not char.isprintable() and char not in _WHITESPACE for char in text):
        return None
    return text


def hex_dump(data: bytes) -> list[str]:
    """``data`` as lines of an offset and ``HEX_DUMP_WIDTH`` bytes in hex."""
    return [f"{at:08x}  {data[at : at + HEX_DUMP_WIDTH].hex(' ')}" for at in range(0, len(data), HEX_DUMP_WIDTH)] or [
        "(empty)"
    ]


def placed(message: MessageExt) -> str:
    """The topic a message is stored under, and where a delayed copy will go when it is due."""
    real = message.properties.get(Property.REAL_TOPIC) if message.topic == SCHEDULE_TOPIC else None
    return f"{message.topic} (for {real})" if real else message.topic


def message_document(message: MessageExt, *, force_hex: bool = False) -> dict[str, Any]:
    """Everything about one message, as JSON shows it."""
    text = body_text(message.body, force_hex=force_hex)
    properties = message.properties
    return {
        "msgId": message.msg_id,
        "offsetMsgId": message.offset_msg_id,
        "topic": message.topic,
        "queueId": message.queue_id,
        "queueOffset": message.queue_offset,
        "commitLogOffset": message.commit_log_offset,
        "storeSize": message.store_size,
        "tags": message.tags,
        "keys": message.keys,
        "flag": message.flag,
        "sysFlag": message.sys_flag,
        "reconsumeTimes": message.reconsume_times,
        "retryTopic": properties.get(Property.RETRY_TOPIC),
        "realTopic": properties.get(Property.REAL_TOPIC),  # of a copy waiting in the delay topic
        "originMessageId": properties.get(Property.ORIGIN_MESSAGE_ID),
        "bornHost": message.born_host,
        "bornTime": timestamp(message.born_timestamp),
        "bornTimestamp": message.born_timestamp,
        "storeHost": message.store_host,
        "storeTime": timestamp(message.store_timestamp),
        "storeTimestamp": message.store_timestamp,
        "properties": dict(properties),
        "userProperties": message.user_properties,
        "bodySize": len(message.body),
        "bodyEncoding": "utf-8" if text is not None else "hex",
        "body": text if text is not None else message.body.hex(),
    }


def message_block(message: MessageExt, *, force_hex: bool = False) -> str:
    """One message for people: aligned headers, its properties one per line, then its body."""
    headers = [
        ("msgId", message.msg_id),
        ("offsetMsgId", message.offset_msg_id),
        ("topic", placed(message)),
        ("tags", message.tags or ""),
        ("keys", " ".join(message.keys)),
        ("queueId", message.queue_id),
        ("queueOffset", message.queue_offset),
        ("commitLogOffset", message.commit_log_offset),
        ("reconsumeTimes", message.reconsume_times),
        ("bornHost", message.born_host),
        ("bornTime", timestamp(message.born_timestamp)),
        ("storeHost", message.store_host),
        ("storeTime", timestamp(message.store_timestamp)),
        ("storeSize", message.store_size),
        ("flag", message.flag),
        ("sysFlag", message.sys_flag),
    ]
    lines = [f"{name + ':':<17} {value}".rstrip() for name, value in headers]
    lines.append("properties:")
    lines.extend(f"  {name} = {value}" for name, value in sorted(message.properties.items()))
    text = body_text(message.body, force_hex=force_hex)
    if text is not None:
        lines.append(f"body ({len(message.body)} bytes, utf-8):")
        lines.extend(text.splitlines() or [""])
    else:
        lines.append(f"body ({len(message.body)} bytes, hex):")
        lines.extend(hex_dump(message.body))
    return "\n".join(lines)


def message_blocks(messages: list[MessageExt], *, force_hex: bool = False) -> str:
    """Several messages' blocks, each under a numbered rule when there is more than one."""
    if len(messages) == 1:
        return message_block(messages[0], force_hex=force_hex)
    parts = []
    for number, message in enumerate(messages, 1):
        parts.append(f"--- message {number} of {len(messages)} " + "-" * 40)
        parts.append(message_block(message, force_hex=force_hex))
    return "\n".join(parts)
