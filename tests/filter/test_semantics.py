"""NULL and type-mismatch semantics, checked with hypothesis against a reference evaluator.

The reference is written for reading, not speed: every value carries its Java class by name, and the
comparison follows RocketMQ 4.9's ``ComparisonExpression`` table case by case (numbers widen
Integer -> Long -> Double; text meeting a number or boolean is parsed as that type and an unparsable
text raises; a boolean meeting anything else compares "less"; an exception anywhere makes the whole
selector not match).
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.filter import compile_selector


class Failed(Exception):
    """Evaluation raised (RocketMQ logs it and the message does not match)."""


@dataclass(frozen=True)
class V:
    kind: str  # "Integer", "Long", "Double", "String", "Boolean"
    value: object


def parse_int(text: str, bits: int) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise Failed(text)
    number = int(text)
    if not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
        raise Failed(text)
    return number


def parse_double(text: str) -> float:
    text = text.strip()
    if re.fullmatch(r"[+-]?NaN", text):
        return math.nan
    if not re.fullmatch(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", text):
        raise Failed(text)
    return float(text)


def double_key(x: float) -> tuple[int, int]:
    """Java's Double.compareTo order: -0.0 below 0.0, NaN above everything."""
    if math.isnan(x):
        return (2, 0)
    return (0, 0) if x < 0 or (x == 0 and math.copysign(1, x) < 0) else (1, 0)


def java_compare(left: V, right: V) -> int:
    a, b = left, right
    if a.kind != b.kind:
        if a.kind == "Boolean":
            if b.kind == "String":
                raise Failed("ClassCastException")
            return -1
        if a.kind == "Integer":
            if b.kind == "Long":
                a = V("Long", a.value)
            elif b.kind == "Double":
                a = V("Double", float(a.value))  # type: ignore[arg-type]
            elif b.kind == "String":
                b = V("Integer", parse_int(b.value, 32))  # type: ignore[arg-type]
            else:
                return -1
        elif a.kind == "Long":
            if b.kind == "Integer":
                b = V("Long", b.value)
            elif b.kind == "Double":
                a = V("Double", float(a.value))  # type: ignore[arg-type]
            elif b.kind == "String":
                b = V("Long", parse_int(b.value, 64))  # type: ignore[arg-type]
            else:
                return -1
        elif a.kind == "Double":
            if b.kind in ("Integer", "Long"):
                b = V("Double", float(b.value))  # type: ignore[arg-type]
            elif b.kind == "String":
                b = V("Double", parse_double(b.value))  # type: ignore[arg-type]
            else:
                return -1
        elif a.kind == "String":
            text = a.value
            assert isinstance(text, str)
            if b.kind == "Boolean":
                a = V("Boolean", text.lower() == "true")
            elif b.kind == "Integer":
                a = V("Integer", parse_int(text, 32))
            elif b.kind == "Long":
                a = V("Long", parse_int(text, 64))
            elif b.kind == "Double":
                a = V("Double", parse_double(text))
            else:
                return -1
    x, y = a.value, b.value
    if a.kind == "Double" or b.kind == "Double":
        x, y = float(x), float(y)  # type: ignore[arg-type]
        if x < y:
            return -1
        if x > y:
            return 1
        kx = struct.unpack(">q", struct.pack(">d", x))[0] if not math.isnan(x) else 0x7FF8000000000000
        ky = struct.unpack(">q", struct.pack(">d", y))[0] if not math.isnan(y) else 0x7FF8000000000000
        return (kx > ky) - (kx < ky)
    return (x > y) - (x < y)  # type: ignore[operator]


# -- expressions: a tree the test renders to text and evaluates itself ----------------------------

PROPERTY_NAMES = ("a", "b", "c")
PROPERTY_VALUES = ("5", "+5", "5.5", "-3", "7", "3000000000", "abc", "true", "", " 5", "1e3", "NaN")


def literal(kind: str, value: object) -> tuple[str, V | None]:
    if kind == "NULL":
        return "NULL", None
    if kind == "Boolean":
        return ("TRUE" if value else "FALSE"), V("Boolean", value)
    if kind == "String":
        return "'" + str(value).replace("'", "''") + "'", V("String", value)
    if kind == "Double":
        return repr(value), V("Double", value)
    return str(value), V("Long" if not -(2**31) <= value < 2**31 else "Integer", value)  # type: ignore[operator]


numbers = st.one_of(
    st.sampled_from([0, 1, 5, 7, 2147483647, 3000000000]).map(lambda n: literal("Integer", n)),
    st.sampled_from([0.5, 5.0, 5.5, 1000.0, 2.5e10]).map(lambda x: literal("Double", x)),
)
negated = numbers.map(lambda lit: ("-" + lit[0], V(lit[1].kind, -lit[1].value)))  # type: ignore[union-attr,operator]
texts = st.sampled_from(["5", "abc", "true", "it's"]).map(lambda s: literal("String", s))
properties_ = st.sampled_from(PROPERTY_NAMES).map(lambda name: (name, ("prop", name)))


@st.composite
def conditions(draw: st.DrawFn, depth: int = 0) -> tuple[str, object]:
    """(text, tree) of a selector the parser accepts; trees are tuples the reference walks."""
    choices = ["compare", "equal", "null", "in", "between", "constant", "bare"]
    if depth < 3:
        choices += ["and", "or", "not"] * 2
    choice = draw(st.sampled_from(choices))
    if choice == "compare":
        op = draw(st.sampled_from(["<", "<=", ">", ">="]))
        left = draw(st.one_of(properties_, numbers, negated))
        right = draw(st.one_of(properties_, numbers, negated))
        return f"{left[0]} {op} {right[0]}", ("cmp", op, left[1], right[1])
    if choice == "equal":
        op = draw(st.sampled_from(["=", "<>"]))
        left = draw(st.one_of(properties_, numbers, texts))
        right = draw(st.one_of(properties_, numbers, texts, st.booleans().map(lambda b: literal("Boolean", b))))
        tree = ("eq", left[1], right[1])
        return f"{left[0]} {op} {right[0]}", tree if op == "=" else ("not", tree)
    if choice == "null":
        name = draw(st.sampled_from(PROPERTY_NAMES))
        negative = draw(st.booleans())
        tree = ("eq", ("prop", name), None)
        return f"{name} IS {'NOT ' if negative else ''}NULL", ("not", tree) if negative else tree
    if choice == "in":
        name = draw(st.sampled_from(PROPERTY_NAMES))
        values = draw(st.lists(st.sampled_from(PROPERTY_VALUES), min_size=1, max_size=3))
        negative = draw(st.booleans())
        text = ", ".join("'" + v + "'" for v in values)
        return f"{name} {'NOT ' if negative else ''}IN ({text})", ("in", name, frozenset(values), negative)
    if choice == "between":
        name = draw(st.sampled_from(PROPERTY_NAMES))
        low, high = sorted([draw(st.integers(-3, 8)), draw(st.integers(-3, 8))])
        negative = draw(st.booleans())
        prop, lo, hi = ("prop", name), V("Integer", low), V("Integer", high)
        if negative:
            tree: object = ("or", ("cmp", "<", prop, lo), ("cmp", ">", prop, hi))
        else:
            tree = ("and", ("cmp", ">=", prop, lo), ("cmp", "<=", prop, hi))
        return f"{name} {'NOT ' if negative else ''}BETWEEN {low} AND {high}", tree
    if choice == "constant":
        value = draw(st.sampled_from([True, False, None]))
        return ("NULL" if value is None else str(value).upper()), ("const", value)
    if choice == "bare":
        name = draw(st.sampled_from(PROPERTY_NAMES))
        return name, ("cast", name)
    if choice == "not":
        inner_text, inner = draw(conditions(depth + 1))
        return f"NOT ({inner_text})", ("not", inner)
    left_text, left = draw(conditions(depth + 1))
    right_text, right = draw(conditions(depth + 1))
    return f"({left_text}) {choice.upper()} ({right_text})", (choice, left, right)


def operand(node: object, props: dict[str, str]) -> V | None:
    if node is None:
        return None
    if isinstance(node, V):
        return node
    assert isinstance(node, tuple) and node[0] == "prop"
    value = props.get(node[1])
    return None if value is None else V("String", value)


def reference(tree: object, props: dict[str, str]) -> bool | None:
    kind = tree[0]  # type: ignore[index]
    if kind == "const":
        return tree[1]  # type: ignore[index,no-any-return]
    if kind == "cast":
        return None if props.get(tree[1]) is None else False  # type: ignore[index]
    if kind == "not":
        inner = reference(tree[1], props)  # type: ignore[index]
        return None if inner is None else not inner
    if kind == "and":
        left = reference(tree[1], props)  # type: ignore[index]
        if left is False:
            return False
        right = reference(tree[2], props)  # type: ignore[index]
        if right is False:
            return False
        return None if None in (left, right) else True
    if kind == "or":
        left = reference(tree[1], props)  # type: ignore[index]
        if left is True:
            return True
        right = reference(tree[2], props)  # type: ignore[index]
        if right is True:
            return True
        return None if None in (left, right) else False
    if kind == "in":
        value = props.get(tree[1])  # type: ignore[index]
        return None if value is None else (value in tree[2]) != tree[3]  # type: ignore[index]
    if kind == "eq":
        left, right = operand(tree[1], props), operand(tree[2], props)  # type: ignore[index]
        if left is None and right is None:
            return True
        if left is None:
            return None
        if right is None:
            return False
        if left.kind == right.kind and left.kind != "Double":
            return left.value == right.value
        return java_compare(left, right) == 0
    assert kind == "cmp"
    left = operand(tree[2], props)  # type: ignore[index]
    if left is None:
        return None
    right = operand(tree[3], props)  # type: ignore[index]
    if right is None:
        return None
    if left.kind == right.kind == "String":
        result = java_compare(V("Double", parse_double(left.value)), V("Double", parse_double(right.value)))  # type: ignore[arg-type]
    else:
        result = java_compare(left, right)
    return {"<": result < 0, "<=": result <= 0, ">": result > 0, ">=": result >= 0}[tree[1]]  # type: ignore[index]


def expected(tree: object, props: dict[str, str]) -> bool | None:
    try:
        return reference(tree, props)
    except Failed:
        return None


messages = st.dictionaries(st.sampled_from(PROPERTY_NAMES), st.sampled_from(PROPERTY_VALUES), max_size=3)


@settings(max_examples=600, deadline=None)
@given(conditions(), messages)
def test_selector_agrees_with_the_reference(selector: tuple[str, object], properties: dict[str, str]) -> None:
    text, tree = selector
    compiled = compile_selector(text)
    want = expected(tree, properties)
    assert compiled.evaluate(properties) is want, (text, properties)
    assert compiled.matches(properties) is (want is True)


def test_double_order_is_javas() -> None:
    """-0.0 < 0.0 and NaN = NaN, as Double.compareTo has them (the reference's table)."""
    assert compile_selector("a = 0.5").evaluate({"a": "NaN"}) is False
    assert compile_selector("a > b").evaluate({"a": "NaN", "b": "NaN"}) is False
    assert compile_selector("a >= b").evaluate({"a": "NaN", "b": "NaN"}) is True
    assert compile_selector("a < b").evaluate({"a": "-0.0", "b": "0.0"}) is True
    assert double_key(-0.0) < double_key(0.0)
