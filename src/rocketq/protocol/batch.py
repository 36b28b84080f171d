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

from librt.strings import BytesWriter, write_i16_be, write_i32_be

from rocketq.protocol.errors import LocalProtocolError, RemoteProtocolError

_ITEM_HEAD: Final = struct.Struct(">iiiii")  # total_size, magic, body_crc, flag, body_length
_PROPERTIES_LENGTH: Final = struct.Struct(">h")
ITEM_OVERHEAD: Final = _ITEM_HEAD.size + _PROPERTIES_LENGTH.size
_MAX_PROPERTIES_LENGTH: Final = 0x7FFF


class BatchItem(NamedTuple):
    """One message of a batch (a tuple: a broker decodes hundreds per request)."""

    body: bytes
    properties: str = ""
    flag: int = 0


def encode_batch(items: Iterable[BatchItem]) -> bytes:
    """The batch body of ``items``, written into one buffer (``write_item``).

    Raises:
        LocalProtocolError: An item's properties take more than 32767 bytes (their length is an int16).
    """
    out = BytesWriter()
    for item in items:
        write_item(out, item.body, item.properties, item.flag)
    return out.getvalue()


def write_item(out: BytesWriter, body: bytes, properties: str, flag: int) -> None:
    """Append one message to the batch body being written in ``out`` (compiled, each field is a store
    into the buffer: no bytes object per field, none per item besides non-empty properties' UTF-8).

    Raises:
        LocalProtocolError: ``properties`` take more than 32767 bytes (their length is an int16).
    """
    if type(body) is not bytes:  # a bytearray or memoryview body
        body = bytes(body)
    encoded = properties.encode() if properties else b""
    properties_length = len(encoded)
    if properties_length > _MAX_PROPERTIES_LENGTH:
        raise LocalProtocolError(
            f"batch item properties of {properties_length} bytes exceed {_MAX_PROPERTIES_LENGTH} bytes"
        )
    write_i32_be(out, ITEM_OVERHEAD + len(body) + properties_length)  # total_size
    write_i32_be(out, 0)  # magic
    write_i32_be(out, 0)  # body_crc
    write_i32_be(out, flag)
    write_i32_be(out, len(body))
    out.write(body)
    write_i16_be(out, properties_length)
    if properties_length:
        out.write(encoded)


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
