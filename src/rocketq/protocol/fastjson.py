"""Tolerance for fastjson's JSON dialect.

fastjson (the Java side's JSON library) writes maps with integer keys without quotes,
e.g. ``{"brokerAddrs":{0:"127.0.0.1:10911"}}`` or ``{"offsetTable":{0:12}}``. Standard
JSON parsers, msgspec included, reject that. :func:`quote_integer_keys` rewrites such
keys to quoted ones and leaves everything inside string literals alone; it runs only
after a strict parse has failed, so well-formed bodies pay nothing for it.
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
