"""RemotingCommand: the unit every RocketMQ frame carries, its header encoders, and the builders of
requests and responses (compiled: every frame goes through here). Headers are decoded in
``rocketq.protocol.header_decode``.

A command is a small header (code, opaque, flags, ``extFields``, ...) plus an opaque
body. The header travels in one of two encodings, chosen per request by the sender:

* JSON (serialize type 0), what every client uses by default. Keys as fastjson writes
  them; see docs/protocol.md#json-header. Readers must tolerate unknown keys (Java's
  ``serializeTypeCurrentRPC``), the C++ client's trailing newline, and ``extFields``
  values that are numbers or booleans instead of strings.
* Binary "ROCKETMQ" (serialize type 1), mirroring ``RocketMQSerializable``::

      code            int16
      language        uint8     LanguageCode value
      version         int16
      opaque          int32
      flag            int32
      remark_length   int32     0 means null or empty
      remark          UTF-8
      ext_length      int32     byte length of the entries that follow
      entries         key_length int16, key, value_length int32, value (UTF-8)

We always *write* ``extFields`` values as JSON strings: the C++ client ignores numbers
(docs/protocol.md#rule-1-extfields-values-are-strings).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any, Final, TypeAlias

import msgspec
from mypy_extensions import mypyc_attr

from rocketq.protocol.codes import LanguageCode, SerializeType
from rocketq.protocol.errors import LocalProtocolError, RemoteProtocolError

RESPONSE_FLAG: Final = 0b01
"""``flag`` bit 0: the command is a response."""
ONEWAY_FLAG: Final = 0b10
"""``flag`` bit 1: the request expects no response."""

DEFAULT_VERSION: Final = 409
"""``MQVersion.V4_9_8``, the version we announce. Versions >= 401 select standard JSON routes."""

Body: TypeAlias = bytes | memoryview
"""A command body: ``bytes``, or a ``memoryview`` of contiguous bytes. The frame decoder hands a large frame's
body on as a read-only ``memoryview`` of the buffer it was received into (no copy), a small one's as ``bytes``;
a reader that needs ``bytes`` converts (``bytes(body)``, a copy only for a view)."""


@mypyc_attr(acyclic=True)  # see rocketq.native.modules
class RemotingCommand:
    """One request or response. Immutable by convention: build a new one rather than change one.

    A plain class, not a msgspec Struct, so that the compiled message path reads its fields natively.

    Attributes:
        code: Request code in a request, response code in a response. Kept as a plain
            ``int`` because peers may send codes we do not know.
        language: Sender's language.
        version: Sender's ``MQVersion`` ordinal.
        opaque: Request id; a response echoes its request's opaque.
        flag: Bit 0 marks a response, bit 1 a oneway request.
        remark: Error text, or None.
        ext_fields: The custom header, always text to text. A server's request keeps it as the JSON
            text it came in (``ext_json``) until it is first read (then decoded and normalised, once).
        body: Opaque payload.
        serialize_type: Encoding of the header on the wire.
        encoded_header: The header exactly as ``encode_header`` would write it from the fields above, when
            its builder wrote it already (the broker's answer to a stored send, from a template); None:
            ``encode_header`` encodes the fields. Not compared by ``==``.
        body_parts: The body as buffers written one after the other without being joined (``body`` is
            then empty), or None: the broker's pull answer carries its records this way, as views of
            the store's mapped files (``encode_frame_parts``). Compared by ``==`` as the bytes they join to.
        ext_json: The ``extFields`` object of a received JSON header as its JSON text (a ``msgspec.Raw``;
            a ``str`` in an answer the broker wrote from a template), while ``ext_fields`` has not been
            read; None once it has, or when there was none. A reader that wants a typed header decodes
            it from this text at once (``header_decode.ext_header``), without the dict: the broker's
            send and pull handlers do.
        typed_header: The custom header as the typed header its request code reads (a send's
            ``SendMessageRequestHeaderV2``, a pull's ``PullMessageRequestHeader``), when the frame decoder
            read it in the same decode as the frame's header (``header_decode.decode_command``); None
            otherwise. ``ext_header`` hands it on; ``ext_fields`` are then read from ``header_json``.
        header_json: The whole JSON header a ``typed_header`` was read from, while ``ext_fields`` has not
            been read (they are decoded from it when they are: guards, observers, other readers); else None.
    """

    __slots__ = (
        "_ext_fields",
        "body",
        "body_parts",
        "code",
        "encoded_header",
        "ext_json",
        "flag",
        "header_json",
        "language",
        "opaque",
        "remark",
        "serialize_type",
        "typed_header",
        "version",
    )

    def __init__(
        self,
        *,
        code: int,
        language: LanguageCode = LanguageCode.JAVA,
        version: int = DEFAULT_VERSION,
        opaque: int = 0,
        flag: int = 0,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: Body = b"",
        serialize_type: SerializeType = SerializeType.JSON,
        encoded_header: bytes | None = None,
        body_parts: list[memoryview] | None = None,
        ext_json: object = None,
        typed_header: object = None,
        header_json: bytes | None = None,
    ) -> None:
        self.code = code
        self.language = language
        self.version = version
        self.opaque = opaque
        self.flag = flag
        self.remark = remark
        read_later = ext_json is not None or header_json is not None
        self._ext_fields: dict[str, str] | None = {} if ext_fields is None and not read_later else ext_fields
        self.ext_json = ext_json
        self.typed_header = typed_header
        self.header_json = header_json
        self.body = body
        self.serialize_type = serialize_type
        self.encoded_header = encoded_header
        self.body_parts = body_parts

    @property
    def ext_fields(self) -> dict[str, str]:
        """The custom header, text to text (decoded from ``ext_json``, or ``header_json``, when first read).

        Raises:
            RemoteProtocolError: ``ext_json`` is not a JSON object of values Python can hold (text that
                is not UTF-8, a number out of range): the header was malformed.
        """
        fields = self._ext_fields
        if fields is None:
            header = self.header_json
            text = self.ext_json if header is None else ext_json_of_header(header)
            fields = self._ext_fields = ext_fields_of_json(text)
            self.ext_json = self.header_json = None
        return fields

    @ext_fields.setter
    def ext_fields(self, fields: dict[str, str]) -> None:
        self._ext_fields = fields
        self.ext_json = self.header_json = self.typed_header = None

    @property
    def is_response(self) -> bool:
        """True if the response bit of ``flag`` is set."""
        return bool(self.flag & RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        """True if the oneway bit of ``flag`` is set. C++ and ali-ons never set it."""
        return bool(self.flag & ONEWAY_FLAG)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RemotingCommand):
            return NotImplemented
        return (
            self.code == other.code
            and self.opaque == other.opaque
            and self.flag == other.flag
            and self.language == other.language
            and self.version == other.version
            and self.remark == other.remark
            and self.ext_fields == other.ext_fields
            and _whole_body(self) == _whole_body(other)
            and self.serialize_type == other.serialize_type
        )

    def __repr__(self) -> str:
        kind = "response" if self.is_response else "request"
        return (
            f"RemotingCommand({kind} code={self.code} opaque={self.opaque} flag={self.flag} "
            f"language={self.language.name} version={self.version} remark={self.remark!r} "
            f"ext_fields={self.ext_fields!r} body=<{len(_whole_body(self))} bytes> "
            f"serialize_type={self.serialize_type.name})"
        )


def _whole_body(command: RemotingCommand) -> Body:
    """The command's body in one buffer (its ``body_parts`` joined, a copy)."""
    parts = command.body_parts
    return command.body if parts is None else b"".join(parts)


_INT16_MIN: Final = -0x8000
_INT16_MAX: Final = 0x7FFF
_INT32_MIN: Final = -0x8000_0000
_INT32_MAX: Final = 0x7FFF_FFFF

# code:h language:B version:h opaque:i flag:i
_BINARY_FIXED = struct.Struct(">hBhii")
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")

# Enum members read per frame, bound once (see rocketq.native.modules on enum members)
_JSON: Final = SerializeType.JSON
_ROCKETMQ: Final = SerializeType.ROCKETMQ
_LANGUAGE_NAMES: Final[dict[int, str]] = {member: member.name for member in LanguageCode}


def make_request(
    code: int,
    *,
    opaque: int,
    ext_fields: Mapping[str, str] | None = None,
    body: Body = b"",
    oneway: bool = False,
    remark: str | None = None,
    version: int = DEFAULT_VERSION,
    language: LanguageCode = LanguageCode.JAVA,
    serialize_type: SerializeType = SerializeType.JSON,
) -> RemotingCommand:
    """Build a request (client requests and server-initiated ones such as NOTIFY)."""
    return RemotingCommand(
        code=code,
        language=language,
        version=version,
        opaque=opaque,
        flag=ONEWAY_FLAG if oneway else 0,
        remark=remark,
        ext_fields=dict(ext_fields) if ext_fields is not None else {},
        body=body,
        serialize_type=serialize_type,
    )


def make_response(
    request: RemotingCommand,
    code: int,
    remark: str | None = None,
    *,
    ext_fields: Mapping[str, str] | None = None,
    body: Body = b"",
    version: int = DEFAULT_VERSION,
    language: LanguageCode = LanguageCode.JAVA,
) -> RemotingCommand:
    """Build the response to ``request``.

    Copies the request's opaque and serialize type (as the Java server does) and sets
    the response flag. ``ext_fields`` defaults to an empty map: Java clients expect a
    non-null ``extFields`` in every response (docs/protocol.md#rule-3-every-response-has-extfields).
    """
    return RemotingCommand(
        code=code,
        language=language,
        version=version,
        opaque=request.opaque,
        flag=RESPONSE_FLAG,
        remark=remark,
        ext_fields=dict(ext_fields) if ext_fields is not None else {},
        body=body,
        serialize_type=request.serialize_type,
    )


# The tail of a JSON header as ``encode_json_header`` writes it for a Java-language command of the default
# version with no remark (keys in its order), for code that writes a frequent command's header from a
# template (the broker's send and pull answers, the clients' send and pull requests): ``{"code":...,
# "extFields":{...}`` of its own, then ``json_header_before_opaque(flag)``, the opaque, ``JSON_HEADER_END``


def json_header_before_opaque(flag: int) -> str:
    """The header's text between its extFields and its opaque, for a command of this ``flag``."""
    return f',"flag":{flag},"language":"{LanguageCode.JAVA.name}","opaque":'


JSON_ANSWER_BEFORE_OPAQUE: Final = json_header_before_opaque(RESPONSE_FLAG)
JSON_HEADER_END: Final = f',"serializeTypeCurrentRPC":"JSON","version":{DEFAULT_VERSION}}}'
_JAVA: Final = LanguageCode.JAVA


def takes_templated_header(request: RemotingCommand) -> bool:
    """Whether the answer to ``request`` may carry a JSON header written from a template
    (``JSON_ANSWER_BEFORE_OPAQUE``, ``JSON_HEADER_END``): the request came in JSON, and its opaque is an
    int32, which the generic encoder would otherwise refuse."""
    return request.serialize_type == _JSON and _INT32_MIN <= request.opaque <= _INT32_MAX


def templated_response(
    request: RemotingCommand,
    code: int,
    ext_fields: dict[str, str],
    encoded_header: bytes | None,
    body: Body = b"",
    body_parts: list[memoryview] | None = None,
) -> RemotingCommand:
    """``make_response(request, code, ext_fields=ext_fields, body=body)`` for a handler that built
    ``ext_fields`` for this answer (kept, not copied) and, where ``takes_templated_header``, its JSON
    header already encoded (``encoded_header``; None: the generic encoder writes it); ``body_parts``:
    the body as buffers not joined (see ``RemotingCommand``)."""
    return RemotingCommand(
        code=code,
        language=_JAVA,
        version=DEFAULT_VERSION,
        opaque=request.opaque,
        flag=RESPONSE_FLAG,
        ext_fields=ext_fields,
        body=body,
        serialize_type=request.serialize_type,
        encoded_header=encoded_header,
        body_parts=body_parts,
    )


def ext_value_to_str(value: object) -> str | None:
    """Normalise one incoming ``extFields`` value to text, Java style.

    Strings pass through, booleans become ``"true"``/``"false"``, numbers their decimal
    text, null becomes None (the key is dropped) and anything else compact JSON.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    return msgspec.json.encode(value).decode()


def normalize_ext_fields(fields: Mapping[str, object] | None) -> dict[str, str]:
    """Apply :func:`ext_value_to_str` to every value, dropping nulls."""
    if not fields:
        return {}
    out: dict[str, str] = {}
    for key, value in fields.items():
        text = ext_value_to_str(value)
        if text is not None:
            out[str(key)] = text
    return out


_decode_ext_json: Final = msgspec.json.Decoder(dict[str, Any] | None).decode  # (bound once: see _JSON_ENCODER)
_JSON_ENCODER: Final = msgspec.json.Encoder()  # (its method bound once would not be looked up per call)


_decode_header_keeping_ext_json: Final = msgspec.json.Decoder(
    dict[str, msgspec.Raw], strict=False
).decode  # (bound once: see _JSON_ENCODER)


def ext_json_of_header(header: bytes) -> object:
    """The ``extFields`` text (a ``msgspec.Raw``, or None) of a whole JSON header that decoded once
    already (``RemotingCommand.header_json``)."""
    return _decode_header_keeping_ext_json(header).get("extFields")


def ext_fields_of_json(text: object) -> dict[str, str]:
    """``extFields`` from its JSON text (a ``msgspec.Raw`` or ``str``; None or empty: none), normalised to text.

    Raises:
        RemoteProtocolError: The text is not a JSON object or null, or holds a value Python cannot
            (invalid UTF-8, a number out of range).
    """
    if text is None:
        return {}
    try:
        fields: dict[str, Any] | None = _decode_ext_json(text) if len(text) else None  # type: ignore[arg-type]
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # (DecodeError includes ValidationError)
        raise RemoteProtocolError(f"invalid JSON command header: extFields: {exc}") from exc
    return incoming_ext_fields(fields)


def incoming_ext_fields(fields: dict[str, Any] | None) -> dict[str, str]:
    """A decoded header's extFields as text: as they came when every value is a string (Java's and
    rocketq's clients), else normalised (the C++ client and ali-ons send numbers and booleans)."""
    if fields is None:
        return {}
    values: Any = fields.values()  # Any: compiled code would check each value against a declared type
    for value in values:
        if type(value) is not str:
            return normalize_ext_fields(fields)
    return fields


def _check_range(name: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise LocalProtocolError(f"{name}={value} does not fit the wire field ({low}..{high})")


def _outgoing_ext_fields(fields: Mapping[str, str]) -> Mapping[str, str]:
    # The type says str, but a stray int must still leave as a JSON string (rule 1).
    values: Any = fields.values()  # Any: compiled code would check each value against the declared str
    for value in values:
        if type(value) is not str:
            return normalize_ext_fields(fields)
    return fields


def encode_json_header(cmd: RemotingCommand) -> bytes:
    """Encode the header as fastjson would: alphabetical keys, null remark omitted."""
    code, version, opaque, flag = cmd.code, cmd.version, cmd.opaque, cmd.flag
    if not (
        _INT32_MIN <= code <= _INT32_MAX
        and _INT32_MIN <= version <= _INT32_MAX
        and _INT32_MIN <= opaque <= _INT32_MAX
        and _INT32_MIN <= flag <= _INT32_MAX
    ):
        for name in ("code", "version", "opaque", "flag"):  # say which
            _check_range(name, getattr(cmd, name), _INT32_MIN, _INT32_MAX)
    header: dict[str, object] = {
        "code": code,
        "extFields": _outgoing_ext_fields(cmd.ext_fields),
        "flag": flag,
        "language": _LANGUAGE_NAMES.get(cmd.language) or LanguageCode(cmd.language).name,
        "opaque": opaque,
    }
    if cmd.remark is not None:
        header["remark"] = cmd.remark
    header["serializeTypeCurrentRPC"] = "JSON"
    header["version"] = version
    return _JSON_ENCODER.encode(header)


# --- binary ROCKETMQ header ---------------------------------------------------------


def encode_binary_header(cmd: RemotingCommand) -> bytes:
    """Encode the header in the binary ROCKETMQ layout (see the module docstring)."""
    _check_range("code", cmd.code, _INT16_MIN, _INT16_MAX)
    _check_range("version", cmd.version, _INT16_MIN, _INT16_MAX)
    _check_range("opaque", cmd.opaque, _INT32_MIN, _INT32_MAX)
    _check_range("flag", cmd.flag, _INT32_MIN, _INT32_MAX)
    parts = [_BINARY_FIXED.pack(cmd.code, int(cmd.language), cmd.version, cmd.opaque, cmd.flag)]
    remark = cmd.remark.encode() if cmd.remark else b""
    parts += [_INT32.pack(len(remark)), remark]
    entries: list[bytes] = []
    for key, value in _outgoing_ext_fields(cmd.ext_fields).items():
        raw_key, raw_value = key.encode(), value.encode()
        _check_range("extFields key length", len(raw_key), 0, _INT16_MAX)
        entries += [_INT16.pack(len(raw_key)), raw_key, _INT32.pack(len(raw_value)), raw_value]
    block = b"".join(entries)
    parts += [_INT32.pack(len(block)), block]
    return b"".join(parts)


# --- entry points --------------------------------------------------------------------


def encode_header(cmd: RemotingCommand) -> bytes:
    """Encode ``cmd``'s header in its own serialize type (its ``encoded_header`` when it has one).

    Raises:
        LocalProtocolError: A field does not fit its wire representation.
    """
    if cmd.encoded_header is not None:
        return cmd.encoded_header
    if cmd.serialize_type == _ROCKETMQ:
        return encode_binary_header(cmd)
    if cmd.serialize_type == _JSON:
        return encode_json_header(cmd)
    raise LocalProtocolError(f"unknown serialize type {cmd.serialize_type!r}")
