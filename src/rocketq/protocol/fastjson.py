"""Tolerance for fastjson's JSON dialect.

fastjson (the Java side's JSON library) writes maps with integer keys without quotes,
e.g. ``{"brokerAddrs":{0:"127.0.0.1:10911"}}`` or ``{"offsetTable":{0:12}}``, and maps
keyed by objects with the object itself as the key (``{{"brokerName":"a",...}:12}``).
Standard JSON parsers, msgspec included, reject both. :func:`quote_integer_keys` and
:func:`quote_object_keys` rewrite such keys to JSON strings and leave everything inside
string literals alone. The first runs only after a strict parse has failed, so
well-formed bodies pay nothing for it; the second only for the bodies Java keys by
MessageQueue (``rocketq.protocol.bodies``).
"""

from __future__ import annotations

import re
from typing import Final

# One alternation scanned left to right: a complete string literal (kept as is, so
# anything that looks like a key inside a string is skipped), or an opening brace or
# comma followed by a bare, optionally negative, integer and a colon: an unquoted key.
_STRING_OR_BARE_KEY: Final = re.compile(
    rb'"[^"\\]*(?:\\.[^"\\]*)*"'
    rb"|(?P<lead>[{,]\s*)(?P<key>-?\d+)(?P<tail>\s*:)",
    re.DOTALL,
)


def _quote(match: re.Match[bytes]) -> bytes:
    key = match.group("key")
    if key is None:
        return match.group(0)
    return match.group("lead") + b'"' + key + b'"' + match.group("tail")


def quote_integer_keys(data: bytes | bytearray | memoryview) -> bytes:
    """Return ``data`` with fastjson's bare integer object keys quoted.

    ``{0:"a",-1:"b"}`` becomes ``{"0":"a","-1":"b"}``. Text inside string values is
    never touched, and array elements (``[0,1]``) are not keys, so they stay as they
    are. Already standard JSON comes back unchanged.
    """
    return _STRING_OR_BARE_KEY.sub(_quote, bytes(data))


def quote_object_keys(data: bytes | bytearray | memoryview) -> bytes:
    """Return ``data`` with fastjson's object-valued keys turned into JSON string keys.

    fastjson writes a map keyed by objects (Java's ``Map<MessageQueue, Long>``) with the key's
    object text as the key: ``{"offsetTable":{{"brokerName":"a","queueId":0,"topic":"T"}:12}}``.
    Each such key becomes a string holding that text, ``"{\\"brokerName\\":...}"``, which
    ``json.loads``/msgspec read back as a key to decode on its own. Everything else, string
    literals included, is copied as it is.
    """
    text = bytes(data)
    out = bytearray()
    # per open container: "k" an object where a key comes next, "v" an object after its key, "a" an array
    open_containers: list[str] = []
    position, end = 0, len(text)
    while position < end:
        byte = text[position]
        if byte == 0x22:  # a string literal: copied whole
            close = _string_end(text, position)
            out += text[position:close]
            position = close
            continue
        innermost = open_containers[-1] if open_containers else ""
        if byte == 0x7B and innermost == "k":  # "{" where a key belongs: an object used as a key
            close = _object_end(text, position)
            out += _json_string(text[position:close])
            position = close
            continue
        if byte == 0x7B:
            open_containers.append("k")
        elif byte == 0x5B:  # "["
            open_containers.append("a")
        elif byte in (0x7D, 0x5D) and open_containers:  # "}" or "]"
            open_containers.pop()
        elif byte == 0x3A and innermost == "k":  # ":" after a key
            open_containers[-1] = "v"
        elif byte == 0x2C and innermost == "v":  # "," between an object's members
            open_containers[-1] = "k"
        out.append(byte)
        position += 1
    return bytes(out)


def _string_end(text: bytes, start: int) -> int:
    """One past the closing quote of the string literal opening at ``start``."""
    position = start + 1
    while position < len(text):
        if text[position] == 0x5C:  # backslash: skip the escaped character
            position += 2
            continue
        if text[position] == 0x22:
            return position + 1
        position += 1
    raise ValueError("unterminated string in JSON text")


def _object_end(text: bytes, start: int) -> int:
    """One past the brace that closes the object opening at ``start``."""
    depth, position = 0, start
    while position < len(text):
        byte = text[position]
        if byte == 0x22:
            position = _string_end(text, position)
            continue
        if byte in (0x7B, 0x5B):
            depth += 1
        elif byte in (0x7D, 0x5D):
            depth -= 1
            if depth == 0:
                return position + 1
        position += 1
    raise ValueError("unterminated object in JSON text")


def _json_string(raw: bytes) -> bytes:
    return b'"' + raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'
