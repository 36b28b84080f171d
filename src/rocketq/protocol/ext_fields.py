"""The base of every typed custom header: ``extFields`` written as text, read leniently.

Each header is a frozen msgspec Struct whose Python names are snake_case and whose wire
names are RocketMQ's camelCase. The header types themselves are in :mod:`rocketq.protocol.headers`.

* :meth:`ExtFieldsHeader.to_ext_fields` writes every value as text (booleans as
  ``"true"``/``"false"``) and leaves out None, because the C++ client reads only JSON
  strings.
* :meth:`ExtFieldsHeader.from_ext_fields` is lax, because clients are: C++ sends
  numbers and ``"0"``/``"1"`` booleans, ali-ons sends raw JS numbers and booleans.
  ``"3"`` becomes 3, ``"true"``/``"1"`` become True, ``"false"``/``"0"`` False. Unknown
  keys (``AccessKey``, ``Signature``, ``bname`` …) are ignored.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self

import msgspec
import msgspec.structs

from rocketq.protocol.codes import RequestCode
from rocketq.protocol.command import normalize_ext_fields
from rocketq.protocol.errors import RemoteProtocolError


def _to_text(value: object) -> str:
    if type(value) is str:
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_TEXT_OF_TYPE = {str: "{}", int: "str({})", bool: "('true' if {} else 'false')"}
"""How a field of each declared type becomes wire text (Python source, the value in place of ``{}``)."""


@functools.cache
def _ext_fields_writer(header_type: type[msgspec.Struct]) -> Callable[[msgspec.Struct], dict[str, str]]:
    """``to_ext_fields`` written out for one header type from its field table, the way ``dataclasses``
    writes ``__init__``: the fields in declaration order, those before the first optional one as a dict
    display, then one statement each (a test for an optional field). The declared type picks the
    conversion; one other than str, int, bool (or one of them or None) goes through ``_to_text``.
    Every request and response carries a header: this takes 1.5-2 µs where a loop over the fields
    took 5."""
    display: list[str] = []
    statements: list[str] = []
    for field in msgspec.structs.fields(header_type):
        declared = field.type
        members = typing.get_args(declared) if isinstance(declared, types.UnionType) else (declared,)
        kinds = [member for member in members if member is not type(None)]
        template = _TEXT_OF_TYPE.get(kinds[0], "_to_text({})") if len(kinds) == 1 else "_to_text({})"
        key = repr(field.encode_name)
        if len(kinds) < len(members):  # may be None: left out then
            statements.append(f"    value = self.{field.name}\n    if value is not None:\n")
            statements.append(f"        fields[{key}] = {template.format('value')}\n")
        elif statements:
            statements.append(f"    fields[{key}] = {template.format('self.' + field.name)}\n")
        else:
            display.append(f"{key}: {template.format('self.' + field.name)}")
    body = "".join(statements)
    source = f"def to_ext_fields(self):\n    fields = {{{', '.join(display)}}}\n{body}    return fields\n"
    namespace: dict[str, Any] = {"_to_text": _to_text}
    exec(compile(source, f"<to_ext_fields of {header_type.__name__}>", "exec"), namespace)
    writer: Callable[[msgspec.Struct], dict[str, str]] = namespace["to_ext_fields"]
    return writer


class ExtFieldsHeader(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Base class of every typed custom header."""

    def to_ext_fields(self) -> dict[str, str]:
        """Return the header as a wire ``extFields`` map: text values, None omitted."""
        return _ext_fields_writer(type(self))(self)

    @classmethod
    def from_ext_fields(cls, fields: Mapping[str, object]) -> Self:
        """Parse a received ``extFields`` map leniently.

        Raises:
            RemoteProtocolError: A required field is missing or a value has the wrong
                type; the message names the wire field.
        """
        try:
            try:  # received commands carry text values already (decode_command normalised them)
                return msgspec.convert(fields, cls, strict=False)
            except msgspec.ValidationError:
                return msgspec.convert(normalize_ext_fields(fields), cls, strict=False)
        except msgspec.ValidationError as exc:
            # We are parsing what the peer sent, so this is the peer's fault.
            raise RemoteProtocolError(f"invalid {cls.__name__}: {exc}") from exc


class RequestHeader(ExtFieldsHeader, frozen=True, kw_only=True):
    """A request's custom header; ``CODE`` is the request code it usually travels with."""

    CODE: ClassVar[RequestCode]


class ResponseHeader(ExtFieldsHeader, frozen=True, kw_only=True):
    """A response's custom header."""
