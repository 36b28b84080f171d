"""A parsed selector made into a predicate over a message's properties, with RocketMQ's semantics.

Each tree node becomes one closure, built once per expression; evaluating a message is a walk of
nested calls over its properties (every value is text, or absent: NULL).

What RocketMQ (4.9) does, and so this:

- Three-valued logic. A comparison with a NULL side is NULL (unknown); ``NOT NULL`` is NULL;
  ``AND`` is false if either side is false, else NULL if either is NULL; ``OR`` is true if either side
  is true, else NULL if either is NULL. A message matches only when the whole selector is true.
- ``=``: ``NULL = NULL`` is true; a NULL left side gives NULL, a NULL right side gives false (so
  ``a = b`` is true when both are absent, unknown when only ``a`` is). ``IS NULL`` is true exactly when
  the operand is absent; ``<>`` is ``NOT (=)``.
- Text meets a number: it is parsed as that number's type, so ``a = 5`` matches ``a`` = ``"5"`` and
  ``"+5"`` but ``a > 5`` fails on ``"5.5"`` (write ``a > 5.0``), and two properties compared with
  ``< <= > >=`` are both parsed as doubles. Text that does not parse is an error that makes the whole
  selector false for that message, even inside an ``OR`` whose other side is true.
- ``IN`` compares text only: a NULL operand is NULL. ``BETWEEN x AND y`` is ``>= x AND <= y``;
  ``NOT BETWEEN x AND y`` is ``< x OR > y``.
- A property used alone as a condition (``a AND b > 1``) is never true: its text is not a boolean.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Final

from rocketq.filter.errors import FilterExpressionError
from rocketq.filter.syntax import (
    BooleanCast,
    Comparison,
    Constant,
    Equality,
    InList,
    Logic,
    Negate,
    Node,
    Not,
    Property,
    parse,
)
from rocketq.filter.values import EvaluationError, JavaLong, Value, compare, compare_doubles, equal, parse_double

Properties = Mapping[str, str]
Evaluate = Callable[[Properties], Value]

CACHE_SIZE: Final = 256
"""Expressions whose compiled form (or parse error) is kept by ``compile_cached``."""

_TESTS: Final[dict[str, Callable[[int], bool]]] = {
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
}
_NUMBERS: Final = (int, JavaLong, float)


class Selector:
    """A compiled SQL92 selector: ``matches(properties)`` says whether a message is selected."""

    __slots__ = ("_evaluate", "expression", "properties")

    def __init__(self, expression: str) -> None:
        """Raises ``FilterExpressionError`` when ``expression`` is malformed."""
        root = parse(expression)
        self.expression = expression
        self.properties: frozenset[str] = frozenset(_names(root))  # the property names it reads
        self._evaluate = _build(root)

    def evaluate(self, properties: Properties) -> bool | None:
        """The selector's value on one message: True, False or None (NULL); None also when the
        evaluation failed (text compared with a number it does not parse as)."""
        try:
            result = self._evaluate(properties)
        except EvaluationError:
            return None
        return result if isinstance(result, bool) else None

    def matches(self, properties: Properties) -> bool:
        """True when the selector is true for a message with these properties."""
        try:
            return self._evaluate(properties) is True
        except EvaluationError:
            return False

    def __repr__(self) -> str:
        return f"Selector({self.expression!r})"


def compile_selector(expression: str) -> Selector:
    """``Selector(expression)``: raises ``FilterExpressionError`` when it is malformed."""
    return Selector(expression)


@functools.lru_cache(maxsize=CACHE_SIZE)
def _compiled_or_error(expression: str) -> Selector | FilterExpressionError:
    try:
        return Selector(expression)
    except FilterExpressionError as exc:
        return exc


def compile_cached(expression: str) -> Selector:
    """``compile_selector`` through a bounded cache of the last ``CACHE_SIZE`` expressions (parse
    errors included): every pull carries its expression, and most carry the same few."""
    found = _compiled_or_error(expression)
    if isinstance(found, FilterExpressionError):
        raise FilterExpressionError(found.reason)
    return found


def _names(node: Node) -> list[str]:
    if isinstance(node, Property):
        return [node.name]
    if isinstance(node, InList):
        return [node.operand.name]
    children = [getattr(node, name) for name in ("operand", "left", "right") if hasattr(node, name)]
    return [name for child in children for name in _names(child)]


def _build(node: Node) -> Evaluate:
    if isinstance(node, Constant):
        value = node.value
        return lambda properties: value
    if isinstance(node, Property):
        name = node.name
        return lambda properties: properties.get(name)
    if isinstance(node, Negate):
        return _negate(_build(node.operand))
    if isinstance(node, Not):
        return _not(_build(node.operand))
    if isinstance(node, BooleanCast):
        return _boolean_cast(_build(node.operand))
    if isinstance(node, Logic):
        left, right = _build(node.left), _build(node.right)
        return _and(left, right) if node.operator == "AND" else _or(left, right)
    if isinstance(node, Comparison):
        return _comparison(_TESTS[node.operator], _build(node.left), _build(node.right))
    if isinstance(node, Equality):
        return _equality(_build(node.left), _build(node.right))
    if isinstance(node, InList):
        return _in_list(node.operand.name, node.values, node.negated)
    raise TypeError(f"unknown selector node {node!r}")


def _negate(operand: Evaluate) -> Evaluate:
    def negate(properties: Properties) -> Value:
        value = operand(properties)
        return -value if type(value) in _NUMBERS else None  # type: ignore[operator]

    return negate


def _not(operand: Evaluate) -> Evaluate:
    def not_(properties: Properties) -> Value:
        value = operand(properties)
        return None if value is None else not value

    return not_


def _boolean_cast(operand: Evaluate) -> Evaluate:
    def cast(properties: Properties) -> Value:
        value = operand(properties)
        return None if value is None else (value if type(value) is bool else False)

    return cast


def _and(left: Evaluate, right: Evaluate) -> Evaluate:
    def and_(properties: Properties) -> Value:
        left_value = left(properties)
        if left_value is False:
            return False
        right_value = right(properties)
        if right_value is False:
            return False
        return None if left_value is None or right_value is None else True

    return and_


def _or(left: Evaluate, right: Evaluate) -> Evaluate:
    def or_(properties: Properties) -> Value:
        left_value = left(properties)
        if left_value is True:
            return True
        right_value = right(properties)
        if right_value is True:
            return True
        return None if left_value is None or right_value is None else False

    return or_


def _comparison(test: Callable[[int], bool], left: Evaluate, right: Evaluate) -> Evaluate:
    def comparison(properties: Properties) -> Value:
        left_value = left(properties)
        if left_value is None:
            return None
        right_value = right(properties)
        if right_value is None:
            return None
        if type(left_value) is str and type(right_value) is str:
            return test(compare_doubles(parse_double(left_value), parse_double(right_value)))
        return test(compare(left_value, right_value))

    return comparison


def _equality(left: Evaluate, right: Evaluate) -> Evaluate:
    def equality(properties: Properties) -> Value:
        return equal(left(properties), right(properties))

    return equality


def _in_list(name: str, values: frozenset[str], negated: bool) -> Evaluate:
    def in_list(properties: Properties) -> Value:
        value = properties.get(name)
        return None if value is None else (value in values) != negated

    return in_list
