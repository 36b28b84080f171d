"""JSON bodies of RocketMQ commands (docs/protocol.md#bodies).

Each body is a msgspec Struct with snake_case Python names and fastjson's camelCase
wire names. :meth:`JsonBody.decode` is liberal, as §3 asks:

* fastjson's unquoted integer keys (``{0:"ip:port"}``) are accepted
  (see :mod:`rocketq.protocol.fastjson`);
* numbers may arrive as strings (the C++ client sends ``"subVersion":"1795…"``);
* heartbeat enums may arrive as names (Java, ali-ons) or ordinals (C++).

:meth:`JsonBody.encode` always writes standard JSON with quoted keys and enum names,
which every observed client accepts.
"""

from __future__ import annotations

from typing import Any, Final, Self

import msgspec

from rocketq.protocol.errors import RemoteProtocolError
from rocketq.protocol.fastjson import quote_integer_keys

ENCODER: Final = msgspec.json.Encoder()
"""The standard-JSON encoder every body writes itself with."""


class JsonBody(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Base class of JSON bodies."""

    def encode(self) -> bytes:
        """Serialise as standard JSON."""
        return ENCODER.encode(self)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> Self:
        """Parse a received body, tolerating fastjson and client dialects.

        Raises:
            RemoteProtocolError: The body is not JSON or does not fit this type.
        """
        try:
            return msgspec.json.decode(data, type=cls, strict=False)
        except msgspec.ValidationError as exc:
            error: msgspec.ValidationError = exc
            raw: bytes | bytearray | memoryview = data
        except msgspec.DecodeError:
            raw = quote_integer_keys(data)
            try:
                return msgspec.json.decode(raw, type=cls, strict=False)
            except msgspec.ValidationError as exc:
                error = exc
            except msgspec.DecodeError as exc:
                raise RemoteProtocolError(f"invalid JSON in {cls.__name__} body: {exc}") from exc
        # Slow path for dialects a typed decode cannot express (e.g. enum ordinals). Only
        # bodies that failed validation get here, so the second parse costs nothing normally.
        try:
            return msgspec.convert(cls._normalize(msgspec.json.decode(raw)), cls, strict=False)
        except msgspec.ValidationError:
            raise RemoteProtocolError(f"invalid {cls.__name__} body: {error}") from error

    @classmethod
    def _normalize(cls, obj: Any) -> Any:
        """Rewrite decoded builtins before a second, lax conversion. Identity by default."""
