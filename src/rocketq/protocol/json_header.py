"""The wire shape of a JSON command header, for decoding only (msgspec Structs, so this module stays
interpreted: ``rocketq.native.modules``). ``rocketq.protocol.header_decode`` decodes with them; the
``...FrameHeader`` shapes read a hot request's typed header with the frame's, in one decode."""

from __future__ import annotations

from typing import Any

import msgspec

from rocketq.protocol.headers import PullMessageRequestHeader, SendMessageRequestHeader, SendMessageRequestHeaderV2


class JsonHeaderFields(msgspec.Struct, gc=False):
    """Wire shape of a JSON header without its extFields, for decoding only. Unknown keys are ignored.
    Not tracked by the garbage collector (``gc=False``): one is made per frame, and what it holds (text,
    numbers, a dict of decoded JSON) cannot refer back to it."""

    code: int
    language: str | int = "JAVA"
    version: int = 0
    opaque: int = 0
    flag: int = 0
    remark: str | None = None


class JsonHeader(JsonHeaderFields):
    """Any JSON header: extFields values of any JSON type, normalised to text after decoding."""

    ext_fields: dict[str, Any] | None = msgspec.field(default=None, name="extFields")


class JsonHeaderKeepingExtFields(JsonHeaderFields):
    """Any JSON header, its extFields kept as their JSON text (checked as JSON, not decoded; empty when
    the header has none), for a reader that decodes them itself: a server's requests
    (``RemotingCommand.ext_json``)."""

    ext_fields: msgspec.Raw = msgspec.field(default=msgspec.Raw(), name="extFields")


class SendFrameHeader(JsonHeaderFields, gc=False, kw_only=True):
    """A SEND_MESSAGE (10) request's whole JSON header (the C++ client's send), its extFields read as the
    typed long header in the same decode (``header_decode.decode_command``'s request lane)."""

    ext_fields: SendMessageRequestHeader = msgspec.field(name="extFields")


class SendV2FrameHeader(JsonHeaderFields, gc=False, kw_only=True):
    """A SEND_MESSAGE_V2 (310) or SEND_BATCH_MESSAGE (320) request's whole JSON header, its extFields read
    as the typed header in the same decode (``header_decode.decode_command``'s request lane)."""

    ext_fields: SendMessageRequestHeaderV2 = msgspec.field(name="extFields")


class PullFrameHeader(JsonHeaderFields, gc=False, kw_only=True):
    """A PULL_MESSAGE request's whole JSON header, its extFields read as the typed header in the same
    decode (``header_decode.decode_command``'s request lane)."""

    ext_fields: PullMessageRequestHeader = msgspec.field(name="extFields")
