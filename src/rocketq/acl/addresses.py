"""Remote-address patterns of ``plain_acl.yml`` (``whiteRemoteAddress``, ``globalWhiteRemoteAddresses``).

The forms RocketMQ 4.x accepts, for IPv4 and IPv6:

=============================  ===============================================================
``""`` or absent               matches nothing
``*``, ``*.*.*.*``,            matches every address
``*:*:*:*:*:*:*:*``
``192.168.1.5``, ``::1``       that address (IPv6 in any spelling: ``::1`` is ``0:0:0:0:0:0:0:1``)
``192.168.1.5,192.168.1.6``    any of these addresses
``192.168.1.{5,6,7}``          any of these values of the last part
``192.168.1.*``,               exact leading parts, then one part that is ``*`` or a range
``192.168.1-10.*``,            ``a-b`` (inclusive; hexadecimal in IPv6), then only ``*`` parts;
``192.168.*``, ``1050::5:*``   a pattern ending in ``*`` with fewer parts is padded with ``*``
=============================  ===============================================================

A pattern RocketMQ would read loosely is an error here: a part after a ``*`` or a range that is not
``*`` (``192.168.*.5``: RocketMQ ignores the ``5`` and lets in all of ``192.168.*.*``), a value out of
range, a first part that is not a plain number. A client connected over IPv6 with an IPv4-mapped
address (``::ffff:10.0.0.1``) is matched as its IPv4 address.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from typing import Final

from rocketq.common.errors import RocketqError

Host = tuple[int, ...]
"""An address as its parts: 4 octets (IPv4) or 8 groups of 16 bits (IPv6)."""

Span = tuple[tuple[int, int], ...]
"""For each part of an address, the lowest and highest value it may have."""

_ANY_FORMS: Final = frozenset({"*", "*.*.*.*", "*:*:*:*:*:*:*:*"})
_GROUPS: Final = struct.Struct(">8H")


class AclConfigError(RocketqError, ValueError):
    """An ACL file, or a part of one, that cannot be used: says what and where."""


def parse_host(text: str) -> Host | None:
    """``text`` (a peer's address, no port) as its parts; None when it is not an IP address."""
    try:
        address = ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address):
        mapped = address.ipv4_mapped
        if mapped is None:
            return tuple(_GROUPS.unpack(address.packed))
        address = mapped
    return tuple(address.packed)


@dataclass(frozen=True, slots=True)
class AddressPattern:
    """A parsed pattern: ``matches(host)`` when every part of ``host`` lies in one of the ``spans``."""

    text: str
    spans: tuple[Span, ...] = ()
    matches_all: bool = False

    def matches(self, host: Host | None) -> bool:
        if self.matches_all:
            return True
        if host is None or not self.spans:  # no pattern (most accounts): asked on every request
            return False
        return any(
            len(span) == len(host) and all(low <= part <= high for part, (low, high) in zip(host, span, strict=True))
            for span in self.spans
        )


NO_ADDRESS: Final = AddressPattern("")
"""The pattern of an empty or absent entry: matches nothing."""


def parse_address_pattern(text: str | None) -> AddressPattern:
    """Parse one pattern (see the module docstring).

    Raises:
        AclConfigError: ``text`` is none of the forms, naming what is wrong.
    """
    pattern = (text or "").strip()
    if not pattern:
        return NO_ADDRESS
    if pattern in _ANY_FORMS:
        return AddressPattern(pattern, matches_all=True)
    try:
        if pattern.endswith("}"):
            spans = _value_list(pattern)
        elif "," in pattern:
            spans = tuple(_exact(item.strip()) for item in pattern.split(","))
        elif "*" in pattern or "-" in pattern:
            spans = (_range(pattern),)
        else:
            spans = (_exact(pattern),)
    except AclConfigError as exc:
        raise AclConfigError(f"address pattern {pattern!r}: {exc}") from None
    return AddressPattern(pattern, spans)


def _exact(text: str) -> Span:
    host = parse_host(text)
    if host is None:
        raise AclConfigError(f"{text!r} is not an IP address")
    return tuple((part, part) for part in host)


def _value_list(pattern: str) -> tuple[Span, ...]:
    opening = pattern.rfind("{")
    prefix, values = pattern[:opening], pattern[opening + 1 : -1]
    if opening < 0 or not prefix.endswith((".", ":")) or "{" in prefix or "}" in prefix:
        raise AclConfigError("a {a,b} list must be the whole last part")
    if "." in prefix and prefix.count(".") != 3:
        raise AclConfigError("an IPv4 pattern has four parts")
    items = [value.strip() for value in values.split(",")]
    if not all(items):
        raise AclConfigError("the {a,b} list has an empty value")
    return tuple(_exact(prefix + value) for value in items)


def _range(pattern: str) -> Span:
    if ":" in pattern:
        parts, base, top, size = _ipv6_parts(pattern), 16, 0xFFFF, 8
    else:
        parts, base, top, size = pattern.split("."), 10, 255, 4
    if len(parts) < size and parts[-1] == "*":
        parts = parts + ["*"] * (size - len(parts))
    if len(parts) != size:
        raise AclConfigError(f"expected {size} parts, found {len(parts)}")
    span: list[tuple[int, int]] = []
    widened = False  # a * or a range was seen: only * may follow
    for index, part in enumerate(parts):
        part = part.strip()
        if part == "*":
            if index == 0:
                raise AclConfigError("the first part must be a number")
            span.append((0, top))
            widened = True
            continue
        if widened:
            raise AclConfigError(f"part {part!r} follows a * or a range: only * may")
        if "-" in part:
            if index == 0:
                raise AclConfigError("the first part must be a number")
            low_text, _, high_text = part.partition("-")
            low, high = _number(low_text, base, top), _number(high_text, base, top)
            if low > high:
                raise AclConfigError(f"range {part!r} starts after it ends")
            span.append((low, high))
            widened = True
        else:
            value = _number(part, base, top)
            span.append((value, value))
    return tuple(span)


def _ipv6_parts(pattern: str) -> list[str]:
    if pattern.count("::") > 1:
        raise AclConfigError("'::' appears more than once")
    if "::" not in pattern:
        return pattern.split(":")
    head_text, tail_text = pattern.split("::")
    head = head_text.split(":") if head_text else []
    tail = tail_text.split(":") if tail_text else []
    missing = 8 - len(head) - len(tail)
    if missing < 1:
        raise AclConfigError("'::' stands for no group")
    return head + ["0"] * missing + tail


def _number(text: str, base: int, top: int) -> int:
    digits = text.strip()
    try:
        value = int(digits, base) if digits and digits.isalnum() else -1
    except ValueError:
        value = -1
    if not 0 <= value <= top:
        raise AclConfigError(f"{text!r} is not a number from 0 to {top:{'x' if base == 16 else 'd'}}")
    return value
