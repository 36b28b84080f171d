"""Decoding a received command's header (compiled: every frame goes through here), and reading a
request's custom header straight from the JSON it came in.

The two header encodings are described in ``rocketq.protocol.command``. A JSON header is decoded in one
msgspec call. Its ``extFields`` become a dict of text (values of other JSON types normalised, as Java
does), or, for a server's requests (``keep_ext_json``), stay the JSON text they came in until a reader
wants them: the broker's send and pull handlers read their typed header from that text at once
(``ext_header``), which costs about half of making the dict and converting it, and readers of single
values read them without the dict (``ext_value``). Either way a reader gets what the dict would have
given it (tests/protocol/test_header_decode.py holds them equal).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, Final, TypeVar

import msgspec

from rocketq.protocol.codes import LanguageCode, SerializeType
from rocketq.protocol.command import Body, RemotingCommand, ext_value_to_str, incoming_ext_fields
from rocketq.protocol.errors import RemoteProtocolError
from rocketq.protocol.ext_fields import ExtFieldsHeader
from rocketq.protocol.json_header import (
    JsonHeader,
    JsonHeaderKeepingExtFields,
    PullFrameHeader,
    SendFrameHeader,
    SendV2FrameHeader,
)

H = TypeVar("H", bound=ExtFieldsHeader)

# bound methods, kept: compiled code calls them at once (a method named on the object is looked up per call)
_decode_json_header_wire: Final = msgspec.json.Decoder(JsonHeader, strict=False).decode
_decode_json_header_keeping: Final = msgspec.json.Decoder(JsonHeaderKeepingExtFields, strict=False).decode
_decode_send_frame: Final = msgspec.json.Decoder(SendFrameHeader, strict=False).decode
_decode_send_v2_frame: Final = msgspec.json.Decoder(SendV2FrameHeader, strict=False).decode
_decode_pull_frame: Final = msgspec.json.Decoder(PullFrameHeader, strict=False).decode
_SEND_V2_START: Final = b'{"code":310,'
_SEND_BATCH_START: Final = b'{"code":320,'
_SEND_START: Final = b'{"code":10,'
_PULL_START: Final = b'{"code":11,'
"""How the JSON headers of the hot requests start as Java's, the C++ client's and rocketq's clients write
them (keys in order): such a header is decoded with its typed custom header in one pass (the request
lane)."""
_header_values: Final = msgspec.structs.astuple
"""A decoded ``JsonHeader``'s values in its field order: code, language, version, opaque, flag,
remark, extFields (or their text)."""

# Enum members read per frame, bound once (see rocketq.native.modules on enum members)
_JSON: Final = SerializeType.JSON
_ROCKETMQ: Final = SerializeType.ROCKETMQ
_JSON_CODE: Final[int] = int(_JSON)  # (compared as ints: a frame's type against an enum member is a generic compare)
_ROCKETMQ_CODE: Final[int] = int(_ROCKETMQ)
_OTHER_LANGUAGE: Final = LanguageCode.OTHER
_LANGUAGES_BY_NAME: Final = {member.name: member for member in LanguageCode}
_JAVA: Final = LanguageCode.JAVA
_JAVA_NAME: Final = _JAVA.name
_CPP: Final = LanguageCode.CPP
_CPP_NAME: Final = _CPP.name

# code:h language:B version:h opaque:i flag:i
_BINARY_FIXED = struct.Struct(">hBhii")
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")


def decode_command(
    serialize_type: int, header: bytes, body: Body = b"", keep_ext_json: bool = False
) -> RemotingCommand:
    """Build a command from a header in the given serialize type and a body. ``keep_ext_json``: a JSON
    header's extFields stay their JSON text until read (``RemotingCommand.ext_json``); a value in them
    that Python cannot hold (text that is not UTF-8, a number out of range) is then reported when they
    are read rather than here.

    Raises:
        RemoteProtocolError: The header is malformed or the serialize type unknown.
    """
    if serialize_type == _JSON_CODE:
        # a send or pull as clients write it: the whole header and its typed custom header in one decode
        decoded: Any = _hot_request(header) if keep_ext_json else None
        lane = decoded is not None
        if decoded is None:
            # one decode whatever the extFields' value types (a decode as text first would fail part-way
            # through every C++ client's frame and decode it twice)
            try:
                decoded = _decode_json_header_keeping(header) if keep_ext_json else _decode_json_header_wire(header)
            except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # (DecodeError includes ValidationError)
                raise RemoteProtocolError(f"invalid JSON command header: {exc}") from exc
        # the Struct's fields in one call, in JsonHeaderFields' order (compiled code would read each with a
        # generic attribute lookup, about 180 instructions apiece); the last is the extFields: their dict
        # (normalised to text here), their JSON text (kept), or the lane's typed header
        code, language, version, opaque, flag, remark, fields = _header_values(decoded)
        return RemotingCommand(
            code=code,
            language=_language_from_wire(language),
            version=version,
            opaque=opaque,
            flag=flag,
            remark=remark,
            ext_fields=None if keep_ext_json else incoming_ext_fields(fields),
            body=body,
            serialize_type=_JSON,
            ext_json=None if lane or not keep_ext_json else fields,
            typed_header=fields if lane else None,
            header_json=header if lane else None,
        )
    if serialize_type == _ROCKETMQ_CODE:
        return _decode_binary_header(header, body)
    raise RemoteProtocolError(f"unknown serialize type {serialize_type}")


def _hot_request(header: bytes) -> Any:
    """The request lane: a send (SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE) or pull request whose
    header starts as clients write it, decoded with its typed custom header in one pass (it becomes
    ``RemotingCommand.typed_header``; the JSON header is kept as ``header_json`` for other readers of its
    extFields), instead of a pass that keeps the extFields text and a second that reads the typed header
    from it. None for any other header, and for one this decode refuses (the general decode then reads
    it, or says what is wrong, as for any request): tests/protocol/test_header_decode.py holds the two
    equal."""
    decode: Callable[[bytes], Any] | None = None
    if header.startswith(_SEND_V2_START):
        decode = _decode_send_v2_frame
    elif header.startswith(_PULL_START):
        decode = _decode_pull_frame
    elif header.startswith(_SEND_START):
        decode = _decode_send_frame
    elif header.startswith(_SEND_BATCH_START):
        decode = _decode_send_v2_frame
    if decode is None:
        return None
    try:
        return decode(header)
    except (msgspec.DecodeError, UnicodeDecodeError):  # (DecodeError includes ValidationError)
        return None


def _language_from_wire(value: str | int) -> LanguageCode:
    if isinstance(value, int):
        try:
            return LanguageCode(value)
        except ValueError:
            return _OTHER_LANGUAGE
    # the names Java's and rocketq's clients (JAVA) and the C++ client (CPP) send, compared before the
    # table is asked: the decoded name is new text per frame, so a lookup would hash it first (~350
    # instructions; a comparison costs a tenth of that)
    if value == _JAVA_NAME:
        return _JAVA
    if value == _CPP_NAME:
        return _CPP
    # Unknown names (a future client) are not worth dropping the connection for.
    return _LANGUAGES_BY_NAME.get(value, _OTHER_LANGUAGE)


# --- typed headers and single values, read from the JSON text ------------------------------------------

_typed_decoders: Final[dict[type, Callable[[Any], Any]]] = {}
"""Per header type, the bound ``decode`` of its lax JSON decoder (made on first use)."""
_value_decoders: Final[dict[str, Callable[[Any], Any]]] = {}
"""Per extFields key, the bound ``decode`` of a one-field Struct that reads only that key's value."""


def ext_header(command: RemotingCommand, header_type: type[H]) -> H:
    """``command``'s custom header as ``header_type``, leniently as ``header_type.from_ext_fields``
    reads it: the one the frame decoder read with the frame when it is of that type (``typed_header``),
    else from the JSON text it came in when it still is (``ext_json``: one decode, no dict), else
    (or when that decode refuses it: a value of another JSON type, a malformed header) from
    ``ext_fields``, converted as they are, then normalised by ``from_ext_fields``.

    Raises:
        RemoteProtocolError: The header is invalid (``from_ext_fields``'s error), or its extFields
            malformed.
    """
    typed: Any = command.typed_header
    if typed is not None and type(typed) is header_type:  # (read with the frame: the request lane)
        read: H = typed
        return read
    text: Any = command.ext_json  # (a msgspec.Raw, or str)
    if text is not None:
        decode: Callable[[Any], Any] | None = _typed_decoders.get(header_type)
        if decode is None:
            decode = _typed_decoders[header_type] = msgspec.json.Decoder(header_type, strict=False).decode
        try:
            header: H = decode(text)
            return header
        except (msgspec.DecodeError, UnicodeDecodeError):  # (the general path below says what is wrong)
            pass
    fields = command.ext_fields
    try:
        converted: H = msgspec.convert(fields, header_type, strict=False)
        return converted
    except msgspec.ValidationError:
        return header_type.from_ext_fields(fields)


def ext_value(command: RemotingCommand, key: str) -> str | None:
    """``command.ext_fields.get(key)``, read from the JSON text it came in when it still is (no dict).

    Raises:
        RemoteProtocolError: The extFields are malformed.
    """
    text: Any = command.ext_json  # (a msgspec.Raw, or str)
    if text is not None:
        decode: Callable[[Any], Any] | None = _value_decoders.get(key)
        if decode is None:
            one_key = msgspec.defstruct("OneExtField", [("value", Any, None)], rename={"value": key}, gc=False)
            decode = _value_decoders[key] = msgspec.json.Decoder(one_key).decode
        try:
            value: Any = msgspec.structs.astuple(decode(text))[0]
            return ext_value_to_str(value)
        except (msgspec.DecodeError, UnicodeDecodeError):  # (not an object: ext_fields raises its error)
            pass
    return command.ext_fields.get(key)


# --- binary ROCKETMQ header -----------------------------------------------------------------------------


class _Reader:
    """Bounds-checked cursor over a binary header."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, size: int, what: str) -> bytes:
        end = self.pos + size
        if size < 0 or end > len(self.data):
            raise RemoteProtocolError(f"binary command header truncated in {what}")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def int32(self, what: str) -> int:
        value: int = _INT32.unpack(self.take(4, what))[0]
        return value

    def int16(self, what: str) -> int:
        value: int = _INT16.unpack(self.take(2, what))[0]
        return value

    def text(self, size: int, what: str) -> str:
        try:
            return self.take(size, what).decode()
        except UnicodeDecodeError as exc:
            raise RemoteProtocolError(f"binary command header: {what} is not UTF-8") from exc


def _decode_binary_header(data: bytes, body: Body) -> RemotingCommand:
    reader = _Reader(data)
    code, language, version, opaque, flag = _BINARY_FIXED.unpack(reader.take(_BINARY_FIXED.size, "fields"))
    remark_length = reader.int32("remark length")
    # Like RocketMQSerializable, a length <= 0 means "no remark" / "no extFields".
    remark = reader.text(remark_length, "remark") if remark_length > 0 else None
    ext_length = reader.int32("extFields length")
    ext_fields: dict[str, str] = {}
    if ext_length > 0:
        block = _Reader(reader.take(ext_length, "extFields"))
        while block.pos < len(block.data):
            key = block.text(block.int16("key length"), "extFields key")
            ext_fields[key] = block.text(block.int32("value length"), "extFields value")
    return RemotingCommand(
        code=code,
        language=_language_from_wire(language),
        version=version,
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext_fields=ext_fields,
        body=body,
        serialize_type=_ROCKETMQ,
    )
