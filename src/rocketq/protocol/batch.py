"""The batch send body (SEND_BATCH_MESSAGE, or code 10/310 with the batch flag; docs/protocol.md#batch-body).

| field      | size      | content                                   |
|------------|-----------|-------------------------------------------|
| total_size | int32     | whole item, this field included           |
| magic      | int32     | 0 (unused)                                |
| body_crc   | int32     | 0 (unused)                                |
| flag       | int32     | user flag                                 |
| body       | int32 + n | body length, body                         |
| properties | int16 + p | properties length, properties (UTF-8)     |
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Final, NamedTuple

from rocketq.protocol.errors import RemoteProtocolError

_ITEM_HEAD: Final = struct.Struct(">iiiii")  # total_size, magic, body_crc, flag, body_length
_PROPERTIES_LENGTH: Final = struct.Struct(">h")
ITEM_OVERHEAD: Final = _ITEM_HEAD.size + _PROPERTIES_LENGTH.size


class BatchItem(NamedTuple):
    """One message of a batch (a tuple: a broker decodes hundreds per request)."""

    body: bytes
    properties: str = ""
    flag: int = 0


def encode_batch(items: Iterable[BatchItem]) -> bytes:
    parts: list[bytes] = []
    for item in items:
        properties = item.properties.encode()
        total = ITEM_OVERHEAD + len(item.body) + len(properties)
        parts.append(_ITEM_HEAD.pack(total, 0, 0, item.flag, len(item.body)))
        parts.append(item.body)
        parts.append(_PROPERTIES_LENGTH.pack(len(properties)))
        parts.append(properties)
    return b"".join(parts)


def decode_batch(data: bytes | memoryview) -> list[BatchItem]:
    """Split a batch body into items.

    Raises:
        RemoteProtocolError: An item's sizes run past the body or do not add up.
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    size = len(data)
    items: list[BatchItem] = []
    append = items.append
    position = 0
    while position < size:
        if size - position < ITEM_OVERHEAD:
            raise RemoteProtocolError(f"batch item at {position}: {size - position} bytes left, need {ITEM_OVERHEAD}")
        total, _, _, flag, body_length = _ITEM_HEAD.unpack_from(data, position)
        body_at = position + _ITEM_HEAD.size
        if body_length < 0 or body_at + body_length + 2 > size:
            raise RemoteProtocolError(f"batch item at {position}: body length {body_length} runs past the body")
        (properties_length,) = _PROPERTIES_LENGTH.unpack_from(data, body_at + body_length)
        properties_at = body_at + body_length + 2
        end = properties_at + properties_length
        if properties_length < 0 or end > size or total != end - position:
            raise RemoteProtocolError(f"batch item at {position}: sizes do not add up (total {total})")
        try:
            properties = data[properties_at:end].decode()
        except UnicodeDecodeError as exc:
            raise RemoteProtocolError(f"batch item at {position}: properties are not UTF-8") from exc
        append(BatchItem(data[body_at : body_at + body_length], properties, flag))
        position = end
    return items
