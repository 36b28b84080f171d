"""Offset message ids: store host IPv4 + port + CommitLog offset as 32 upper-case hex characters."""

from __future__ import annotations

import functools
import ipaddress
import struct
from collections.abc import Sequence
from typing import Final

from rocketq.common.errors import RocketqError
from rocketq.common.offsets import PhysicalOffset

_OFFSET_ID: Final = struct.Struct(">4siq")  # ipv4 address, port, commit log offset


class MessageIdError(RocketqError):
    """A message id that is not a 32-hex-character offset id."""


@functools.lru_cache(maxsize=1024)
def encode_host(host: str, port: int) -> bytes:
    """Pack an IPv4 host and port as the 8 bytes stored in a record (address, then int32 port).

    Cached: a broker packs its own address and its few producers' addresses on every put."""
    return ipaddress.IPv4Address(host).packed + port.to_bytes(4, "big", signed=True)


def decode_host(packed: bytes) -> tuple[str, int]:
    return str(ipaddress.IPv4Address(packed[:4])), int.from_bytes(packed[4:8], "big", signed=True)


def offset_message_id(store_host: bytes, offset: int) -> str:
    """The broker's message id for the record at ``offset``; ``store_host`` is 8 packed bytes."""
    return (store_host + offset.to_bytes(8, "big", signed=True)).hex().upper()


def joined_offset_message_ids(store_host: bytes, offsets: Sequence[int]) -> str:
    """``offset_message_id`` of many records of one broker (a batch's ids) joined with commas, as a
    batch's answer carries them ("" for none), made by a few calls into C instead of a format per id (a
    format per id cost the broker about 0.9 µs per message of a batch, a fifth of its send handler): the
    offsets packed big-endian at once, hexed with a comma every 8 bytes, and the host's hex put in front
    of each."""
    if not offsets:
        return ""
    host = _host_hex(store_host)
    if len(offsets) == 1 and offsets[0] >= 0:  # one message's id (most sends): nothing packed or replaced
        return host + offset_hex(offsets[0])
    packed = struct.pack(f">{len(offsets)}q", *offsets)
    return host + packed.hex(",", 8).upper().replace(",", "," + host)


def offset_hex(offset: int) -> str:
    """The last 16 characters of an offset message id: a CommitLog offset (>= 0) in upper-case hex."""
    return offset.to_bytes(8, "big").hex().upper()


@functools.lru_cache(maxsize=64)
def _host_hex(store_host: bytes) -> str:
    """A broker's host as its message ids begin (it answers every send with ids of its own host)."""
    return store_host.hex().upper()


def parse_offset_message_id(message_id: str) -> tuple[str, int, PhysicalOffset]:
    """Split an offset message id into (host, port, commit log offset)."""
    try:
        raw = bytes.fromhex(message_id)
        address, port, offset = _OFFSET_ID.unpack(raw)
    except (ValueError, struct.error) as exc:
        raise MessageIdError(f"not an offset message id: {message_id!r}") from exc
    return str(ipaddress.IPv4Address(address)), port, PhysicalOffset(offset)
