"""RemotingCommand, the unit every RocketMQ frame carries, and the wire shapes of its JSON header.

These are msgspec Structs, so this module stays interpreted (``rocketq.native.modules``); the header
codecs that every frame goes through, and the builders of requests and responses, are compiled in
:mod:`rocketq.protocol.command_codec`.
"""

from __future__ import annotations

from typing import Any, Final, TypeAlias

import msgspec

from rocketq.protocol.codes import LanguageCode, SerializeType

RESPONSE_FLAG: Final = 0b01
"""``flag`` bit 0: the command is a response."""
ONEWAY_FLAG: Final = 0b10
"""``flag`` bit 1: the request expects no response."""

DEFAULT_VERSION: Final = 409
"""``MQVersion.V4_9_8``, the version we announce. Versions >= 401 select standard JSON routes."""

Body: TypeAlias = bytes | memoryview
"""A command body. Decoders always produce ``bytes``; encoders also accept a ``memoryview``."""


class RemotingCommand(msgspec.Struct, frozen=True, kw_only=True):
    """One request or response.

    Attributes:
        code: Request code in a request, response code in a response. Kept as a plain
            ``int`` because peers may send codes we do not know.
        language: Sender's language.
        version: Sender's ``MQVersion`` ordinal.
        opaque: Request id; a response echoes its request's opaque.
        flag: Bit 0 marks a response, bit 1 a oneway request.
        remark: Error text, or None.
        ext_fields: The custom header, always text to text.
        body: Opaque payload.
        serialize_type: Encoding of the header on the wire.
    """

    code: int
    language: LanguageCode = LanguageCode.JAVA
    version: int = DEFAULT_VERSION
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] = msgspec.field(default_factory=dict)
    body: Body = b""
    serialize_type: SerializeType = SerializeType.JSON

    @property
    def is_response(self) -> bool:
        """True if the response bit of ``flag`` is set."""
        return bool(self.flag & RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        """True if the oneway bit of ``flag`` is set. C++ and ali-ons never set it."""
        return bool(self.flag & ONEWAY_FLAG)

    def __repr__(self) -> str:
        kind = "response" if self.is_response else "request"
        return (
            f"RemotingCommand({kind} code={self.code} opaque={self.opaque} flag={self.flag} "
            f"language={self.language.name} version={self.version} remark={self.remark!r} "
            f"ext_fields={self.ext_fields!r} body=<{memoryview(self.body).nbytes} bytes> "
            f"serialize_type={self.serialize_type.name})"
        )


# --- JSON header wire shapes (decoding only) -----------------------------------------


class JsonHeaderFields(msgspec.Struct):
    """Wire shape of a JSON header without its extFields, for decoding only. Unknown keys are ignored."""

    code: int
    language: str | int = "JAVA"
    version: int = 0
    opaque: int = 0
    flag: int = 0
    remark: str | None = None


class JsonHeader(JsonHeaderFields):
    """Any JSON header: extFields values of any JSON type, normalised to text after decoding."""

    ext_fields: dict[str, Any] | None = msgspec.field(default=None, name="extFields")


class TextJsonHeader(JsonHeaderFields):
    """A JSON header whose extFields values are all strings, as Java and C++ clients send them:
    decoded without normalising each value."""

    ext_fields: dict[str, str] | None = msgspec.field(default=None, name="extFields")
