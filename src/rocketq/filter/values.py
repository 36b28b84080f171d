"""The values a selector computes with, and how RocketMQ (Java) compares them.

A value is ``None`` (SQL NULL: an absent property, or the ``NULL`` literal), a ``bool``, a ``str``
(every property value is text), an ``int`` (a Java ``Integer`` literal: it fits in 32 bits), a
``JavaLong`` (a ``Long`` literal: ``3000000000``) or a ``float`` (a ``Double`` literal).

``compare`` is RocketMQ's three-way comparison of two values of any types. Numbers of different types
are widened (Integer to Long to Double); text met by a number or a boolean is parsed as that type
(``Integer.valueOf``, ``Long.valueOf``, ``Double.valueOf``, ``Boolean.valueOf``); a boolean met by
anything but a boolean, or a number met by a boolean, compares as "less". Text that does not parse as
the number it meets is an error (``EvaluationError``) that makes the whole selector not match.
Doubles compare as Java's ``Double.compareTo``: NaN equals NaN and is above everything, -0.0 < 0.0.
"""

from __future__ import annotations

import re
import struct
from typing import Final

Value = None | bool | str | int | float

INT_MIN: Final = -(2**31)
INT_MAX: Final = 2**31 - 1
LONG_MIN: Final = -(2**63)
LONG_MAX: Final = 2**63 - 1
_CANONICAL_NAN_BITS: Final = 0x7FF8000000000000
_DOUBLE: Final = struct.Struct(">d")
_BITS: Final = struct.Struct(">q")

# Java's Integer/Long.parseInt: an optional sign, then decimal digits (Unicode ones count, as in
# Character.digit); no blanks, no underscores.
_JAVA_INTEGER: Final = re.compile(r"[+-]?\d+")
# Java's Double.valueOf after String.trim(): NaN, Infinity, decimal or hexadecimal notation, and an
# optional f/F/d/D type suffix.
_JAVA_SPECIAL: Final = re.compile(r"[+-]?(?:NaN|Infinity)")
_JAVA_DECIMAL: Final = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?")
_JAVA_HEX: Final = re.compile(r"([+-]?)(0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?")


class JavaLong(int):
    """An integer literal outside the 32-bit range (Java makes it a ``Long``, not an ``Integer``)."""

    __slots__ = ()

    def __neg__(self) -> JavaLong:
        return JavaLong(-int(self))


class EvaluationError(Exception):
    """Evaluating a selector on one message failed (text that is not the number it is compared
    with): RocketMQ counts the message as not matching."""


def parse_integer(text: str, low: int, high: int) -> int:
    """Java's ``Integer.valueOf`` (``low``/``high`` the 32-bit range) or ``Long.valueOf``."""
    if not (text.isascii() and text.isdigit()) and _JAVA_INTEGER.fullmatch(text) is None:
        raise EvaluationError(f"{text!r} is not an integer")
    value = int(text)
    if not low <= value <= high:
        raise EvaluationError(f"{text!r} is out of range")
    return value


def parse_double(text: str) -> float:
    """Java's ``Double.valueOf``: leading and trailing blanks (and control characters) are ignored."""
    stripped = text.strip("".join(chr(c) for c in range(0x21)))
    if _JAVA_SPECIAL.fullmatch(stripped) is not None:
        return float(stripped.replace("Infinity", "inf"))
    if _JAVA_DECIMAL.fullmatch(stripped) is not None:
        return float(stripped.rstrip("fFdD"))
    hexadecimal = _JAVA_HEX.fullmatch(stripped)
    if hexadecimal is not None:
        magnitude = float.fromhex(hexadecimal.group(2))
        return -magnitude if hexadecimal.group(1) == "-" else magnitude
    raise EvaluationError(f"{text!r} is not a number")


def double_bits(value: float) -> int:
    """Java's ``Double.doubleToLongBits`` (every NaN is the canonical one)."""
    return _CANONICAL_NAN_BITS if value != value else _BITS.unpack(_DOUBLE.pack(value))[0]


def compare_doubles(left: float, right: float) -> int:
    """Java's ``Double.compare``."""
    if left < right:
        return -1
    if left > right:
        return 1
    left_bits, right_bits = double_bits(left), double_bits(right)
    return 0 if left_bits == right_bits else (-1 if left_bits < right_bits else 1)


def _convert(value: Value, like: type) -> Value | None:
    """``value`` (of another type) made the type ``like`` as RocketMQ's comparison does, or None when
    that pair of types does not convert (the comparison then answers "less")."""
    kind = type(value)
    if kind is str:
        text = value  # the other side decides what the text must be
        assert isinstance(text, str)
        if like is bool:
            return text.lower() == "true"
        if like is int:
            return parse_integer(text, INT_MIN, INT_MAX)
        if like is JavaLong:
            return parse_integer(text, LONG_MIN, LONG_MAX)
        if like is float:
            return parse_double(text)
        return None
    if kind is bool or like is bool:
        return None
    if like is float:
        return float(value)  # type: ignore[arg-type]
    return value


def compare(left: Value, right: Value) -> int:
    """RocketMQ's comparison of two non-null values: negative, zero or positive."""
    left_type, right_type = type(left), type(right)
    if left_type is not right_type:
        if left_type is bool:
            if right_type is str:  # Java casts the Boolean to String here and fails
                raise EvaluationError("a boolean cannot be compared with text")
            return -1
        widen_left = left_type is str or (left_type is not float and right_type is float)
        if widen_left:
            left = _convert(left, right_type)
            if left is None:
                return -1
        else:
            converted = _convert(right, left_type)
            if converted is None:
                return -1
            right = converted
    if type(left) is float or type(right) is float:
        return compare_doubles(float(left), float(right))  # type: ignore[arg-type]
    if type(left) is str and type(right) is str:
        return _compare_text(left, right)
    return (left > right) - (left < right)  # type: ignore[operator]


def _compare_text(left: str, right: str) -> int:
    """Java's ``String.compareTo``: by UTF-16 code units."""
    if left == right:
        return 0
    if left.isascii() and right.isascii():
        return -1 if left < right else 1
    left_units, right_units = left.encode("utf-16-be"), right.encode("utf-16-be")
    return -1 if left_units < right_units else 1


def equal(left: Value, right: Value) -> bool | None:
    """RocketMQ's ``=``: NULL = NULL is true; NULL on the left only is unknown; on the right only, false."""
    if left is None or right is None:
        if left is None and right is None:
            return True
        return None if left is None else False
    if type(left) is type(right) and type(left) is not float:
        return left == right
    return compare(left, right) == 0
