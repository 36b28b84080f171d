"""Parsing a SQL92 selector into a tree, with the checks RocketMQ makes while it builds one.

A small recursive-descent parser rather than a parser library: the grammar is RocketMQ's fixed
JavaCC one (``SelectorParser.jj``, 4.9), LL(2) and six levels deep, and RocketMQ refuses many
expressions not by syntax but while building each node (``a > 'x'``, ``a = NULL``, ``5 AND b``,
``a BETWEEN 10 AND 1``); those checks sit naturally in the descent, next to the rule they belong to.
A hand-written parser also keeps the clients free of a dependency for a 200-line job and reports
errors by column in words a user can act on.

Precedence, loosest first (each level left-associative)::

    or          := and ( OR and )*
    and         := equality ( AND equality )*
    equality    := comparison ( "=" comparison | "<>" comparison | IS NULL | IS NOT NULL )*
    comparison  := unary ( (">" | ">=" | "<" | "<=") unary
                         | [NOT] BETWEEN unary AND unary
                         | [NOT] IN "(" 'text' ( "," 'text' )* ")" )*
    unary       := "+" unary | "-" unary | NOT unary | primary
    primary     := literal | name | "(" or ")"

``NOT`` binds tighter than comparisons, as in RocketMQ: ``NOT a > 5`` is refused (``NOT a`` is
boolean and booleans cannot be compared); write ``NOT (a > 5)``. Unlike RocketMQ 4.9, whose parser
stops at the first token that continues no rule and ignores the rest (``a = 1 b = 2`` means
``a = 1`` there), text left over after a whole expression is an error here.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.filter.errors import FilterExpressionError
from rocketq.filter.lexer import Token, string_value, tokenize
from rocketq.filter.values import INT_MAX, INT_MIN, LONG_MAX, EvaluationError, JavaLong, Value, compare

# -- the tree -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Node:
    text: str  # the source text it was parsed from, for messages


@dataclass(frozen=True, slots=True)
class Constant(Node):
    value: Value  # TRUE/FALSE/NULL are boolean constants (bool or None); text and numbers are not


@dataclass(frozen=True, slots=True)
class Property(Node):
    name: str


@dataclass(frozen=True, slots=True)
class Negate(Node):
    operand: Node


@dataclass(frozen=True, slots=True)
class Not(Node):
    operand: Node


@dataclass(frozen=True, slots=True)
class BooleanCast(Node):
    """A property used as a condition: true only if it holds a boolean, which text never is."""

    operand: Node


@dataclass(frozen=True, slots=True)
class Logic(Node):
    operator: str  # "AND" or "OR"
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Comparison(Node):
    operator: str  # "<", "<=", ">" or ">="
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Equality(Node):
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class InList(Node):
    operand: Property
    values: frozenset[str]
    negated: bool


def is_boolean(node: Node) -> bool:
    """RocketMQ's ``BooleanExpression``: what yields true, false or NULL (TRUE/FALSE/NULL included)."""
    if isinstance(node, Constant):
        return node.value is None or isinstance(node.value, bool)
    return isinstance(node, (Not, BooleanCast, Logic, Comparison, Equality, InList))


def _is_number(value: Value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# -- the checks RocketMQ makes while building nodes -----------------------------------------------


def as_boolean(node: Node) -> Node:
    if is_boolean(node):
        return node
    if isinstance(node, Property):
        return BooleanCast(node.text, node)
    raise FilterExpressionError(f"{node.text!r} is not a condition (it yields no true or false)")


def _comparable(node: Node) -> Node:
    """An operand of < <= > >=: no boolean, no text or NULL literal."""
    if (isinstance(node, Constant) and not _is_number(node.value)) or is_boolean(node):
        raise FilterExpressionError(f"{node.text!r} cannot be compared with < <= > >= (only numbers can)")
    return node


def comparison(operator: str, left: Node, right: Node) -> Comparison:
    return Comparison(f"{left.text} {operator} {right.text}", operator, _comparable(left), _comparable(right))


def equality(left: Node, right: Node) -> Equality:
    for operand in (left, right):
        if isinstance(operand, Constant) and operand.value is None:
            raise FilterExpressionError(f"{operand.text!r} cannot be compared with = or <> (use IS NULL)")
    if isinstance(left, Constant) and isinstance(right, Constant) and is_boolean(left) and not is_boolean(right):
        raise FilterExpressionError(f"{left.text!r} cannot be compared with {right.text!r}")
    return Equality(f"{left.text} = {right.text}", left, right)


def between(value: Node, low: Node, high: Node, text: str) -> Node:
    if isinstance(low, Constant) and isinstance(high, Constant):
        if low.value is None or high.value is None:
            raise FilterExpressionError(f"{text!r}: the bounds of BETWEEN cannot be NULL")
        try:
            reversed_bounds = compare(high.value, low.value) < 0
        except EvaluationError as exc:
            raise FilterExpressionError(f"{text!r}: {exc}") from None
        if reversed_bounds:
            raise FilterExpressionError(f"{text!r}: the lower bound {low.text} is above the upper bound {high.text}")
    return Logic(text, "AND", comparison(">=", value, low), comparison("<=", value, high))


def not_between(value: Node, low: Node, high: Node, text: str) -> Node:
    return Logic(text, "OR", comparison("<", value, low), comparison(">", value, high))


def in_list(operand: Node, values: list[str], negated: bool, text: str) -> InList:
    if not isinstance(operand, Property):
        raise FilterExpressionError(f"{text!r}: IN needs a property name on its left, not {operand.text!r}")
    return InList(text, operand, frozenset(values), negated)


# -- the parser -----------------------------------------------------------------------------------

_WANTED = {"END": "the end of the expression", "NULL": "NULL", "AND": "AND", "STRING": "a 'quoted' text"}


def parse(expression: str) -> Node:
    """The tree of ``expression``, a condition (its root yields true, false or NULL).

    Raises:
        FilterExpressionError: The expression is malformed or means nothing (see the module docstring).
    """
    parser = _Parser(expression)
    root = as_boolean(parser.or_expression())
    if parser.peek.kind != "END":
        raise FilterExpressionError(f"unexpected {parser.peek.describe()} after a complete expression")
    return root


class _Parser:
    def __init__(self, expression: str) -> None:
        self.source = expression
        self.tokens = tokenize(expression)
        self.at = 0

    @property
    def peek(self) -> Token:
        return self.tokens[self.at]

    def peek_kind(self, ahead: int = 0) -> str:
        return self.tokens[min(self.at + ahead, len(self.tokens) - 1)].kind

    def take(self, *kinds: str, wanted: str = "") -> Token:
        token = self.tokens[self.at]
        if token.kind not in kinds:
            wanted = wanted or " or ".join(_WANTED.get(kind, repr(kind)) for kind in kinds)
            raise FilterExpressionError(f"expected {wanted} but found {token.describe()}")
        self.at += 1
        return token

    def text_from(self, start: Token) -> str:
        """The source text from ``start`` to the last token taken."""
        last = self.tokens[self.at - 1]
        return self.source[start.column - 1 : last.column - 1 + len(last.text)]

    def or_expression(self) -> Node:
        start = self.peek
        left = self.and_expression()
        while self.peek.kind == "OR":
            self.take("OR")
            right = self.and_expression()
            left = Logic(self.text_from(start), "OR", as_boolean(left), as_boolean(right))
        return left

    def and_expression(self) -> Node:
        start = self.peek
        left = self.equality_expression()
        while self.peek.kind == "AND":
            self.take("AND")
            right = self.equality_expression()
            left = Logic(self.text_from(start), "AND", as_boolean(left), as_boolean(right))
        return left

    def equality_expression(self) -> Node:
        start = self.peek
        left = self.comparison_expression()
        while True:
            kind = self.peek.kind
            if kind in ("=", "<>"):
                self.take(kind)
                made = equality(left, self.comparison_expression())
                left = made if kind == "=" else Not(self.text_from(start), made)
            elif kind == "IS":
                self.take("IS")
                negated = self.peek.kind == "NOT"
                if negated:
                    self.take("NOT")
                self.take("NULL")
                is_null = Equality(self.text_from(start), left, Constant("NULL", None))
                left = Not(is_null.text, is_null) if negated else is_null
            else:
                return left

    def comparison_expression(self) -> Node:
        start = self.peek
        left = self.unary_expression()
        while True:
            kind = self.peek.kind
            negated = kind == "NOT" and self.peek_kind(1) in ("BETWEEN", "IN")
            if negated:
                self.take("NOT")
                kind = self.peek.kind
            if kind in ("<", "<=", ">", ">="):
                self.take(kind)
                left = comparison(kind, left, self.unary_expression())
            elif kind == "BETWEEN":
                self.take("BETWEEN")
                low = self.unary_expression()
                self.take("AND")
                high = self.unary_expression()
                text = self.text_from(start)
                left = (not_between if negated else between)(left, low, high, text)
            elif kind == "IN":
                self.take("IN")
                self.take("(")
                values = [string_value(self.take("STRING", wanted="a 'quoted' text (IN lists hold text)"))]
                while self.peek.kind == ",":
                    self.take(",")
                    values.append(string_value(self.take("STRING", wanted="a 'quoted' text (IN lists hold text)")))
                self.take(")")
                left = in_list(left, values, negated, self.text_from(start))
            else:
                return left

    def unary_expression(self) -> Node:
        start = self.peek
        kind = start.kind
        if kind == "+":
            self.take("+")
            return self.unary_expression()
        if kind == "-":
            self.take("-")
            operand = self.unary_expression()
            return Negate(self.text_from(start), operand)
        if kind == "NOT":
            self.take("NOT")
            operand = as_boolean(self.unary_expression())
            return Not(self.text_from(start), operand)
        return self.primary_expression()

    def primary_expression(self) -> Node:
        token = self.peek
        if token.kind == "(":
            self.take("(")
            inner = self.or_expression()
            self.take(")")
            return inner
        if token.kind == "NAME":
            self.take("NAME")
            return Property(token.text, token.text)
        literals = ("STRING", "DECIMAL", "FLOAT", "TRUE", "FALSE", "NULL")
        token = self.take(*literals, wanted="a value, a property name or '('")
        return Constant(token.text, literal_value(token))


def literal_value(token: Token) -> Value:
    """The value of a literal token, as RocketMQ makes it (``ConstantExpression``)."""
    if token.kind == "STRING":
        return string_value(token)
    if token.kind in ("TRUE", "FALSE"):
        return token.kind == "TRUE"
    if token.kind == "NULL":
        return None
    if token.kind == "DECIMAL":
        value = int(token.text.rstrip("lL"))
        if value > LONG_MAX:
            raise FilterExpressionError(f"{token.text} at column {token.column} is beyond the 64-bit range")
        return value if INT_MIN <= value <= INT_MAX else JavaLong(value)
    number = float(token.text)
    if number == float("inf"):
        raise FilterExpressionError(f"{token.text} at column {token.column} is beyond the double range")
    if number < 5e-324:  # RocketMQ 4.9 refuses every literal below Double.MIN_VALUE, 0.0 included
        raise FilterExpressionError(
            f"{token.text} at column {token.column} is below the smallest positive double"
            " (RocketMQ refuses 0.0 and smaller literals: write 0)"
        )
    return number
