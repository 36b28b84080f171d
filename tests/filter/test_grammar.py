"""The SQL92 selector grammar, operator by operator, and the expressions RocketMQ refuses."""

from __future__ import annotations

import pytest

from rocketq.filter import FilterExpressionError, compile_cached, compile_selector

# (selector, properties, value: True / False / None for NULL or an evaluation error)
CASES = [
    # comparisons: text against a number is parsed as that number's type
    ("a = 5", {"a": "5"}, True),
    ("a = 5", {"a": "+5"}, True),
    ("a = 5", {"a": "6"}, False),
    ("a = 5", {"a": "5.0"}, None),  # Integer.valueOf("5.0") fails: an error, not a match
    ("a = 5.0", {"a": "5"}, True),
    ("a = 'x'", {"a": "x"}, True),
    ("a = 'it''s'", {"a": "it's"}, True),
    ("a <> 5", {"a": "5"}, False),
    ("a <> 5", {"a": "4"}, True),
    ("a <> 5", {}, None),
    ("a < 5", {"a": "4"}, True),
    ("a < 5", {"a": "5"}, False),
    ("a <= 5", {"a": "5"}, True),
    ("a > 5", {"a": "6"}, True),
    ("a > 5", {"a": "5.5"}, None),
    ("a > 5.0", {"a": "5.5"}, True),
    ("a >= 5", {"a": "5"}, True),
    ("a > 3000000000", {"a": "3000000001"}, True),  # a Long literal parses the text as a long
    ("a > 5", {"a": "3000000001"}, None),  # ... an Integer one as an int, which it is not
    ("a > -5", {"a": "-4"}, True),
    ("a > 3.1E10", {"a": "3.2E10"}, True),
    ("a > .5", {"a": "0.75"}, True),
    ("a > 5L", {"a": "6"}, True),
    ("a > b", {"a": "2.5", "b": "10"}, False),  # two properties: both parsed as doubles
    ("a > b", {"a": "x", "b": "1"}, None),
    ("a = b", {}, True),  # NULL = NULL
    ("a = b", {"b": "1"}, None),  # NULL on the left: unknown
    ("a = b", {"a": "1"}, False),  # NULL on the right: false
    ("a = TRUE", {"a": "True"}, True),
    ("a = FALSE", {"a": "yes"}, True),  # Boolean.valueOf: anything but "true" is false
    # BETWEEN, NOT BETWEEN
    ("a BETWEEN 2 AND 10", {"a": "2"}, True),
    ("a BETWEEN 2 AND 10", {"a": "11"}, False),
    ("a BETWEEN 2 AND 10", {}, None),
    ("a NOT BETWEEN 2 AND 10", {"a": "11"}, True),
    ("a NOT BETWEEN 2 AND 10", {"a": "5"}, False),
    ("a between -1.5 and 1.5", {"a": "0"}, True),
    # IN, NOT IN
    ("TAGS IN ('x', 'y')", {"TAGS": "y"}, True),
    ("TAGS IN ('x', 'y')", {"TAGS": "z"}, False),
    ("TAGS IN ('x')", {}, None),
    ("TAGS NOT IN ('x', 'y')", {"TAGS": "z"}, True),
    ("TAGS NOT IN ('x', 'y')", {"TAGS": "x"}, False),
    ("TAGS NOT IN ('x')", {}, None),
    # IS NULL, IS NOT NULL
    ("a IS NULL", {}, True),
    ("a IS NULL", {"a": "1"}, False),
    ("a IS NOT NULL", {"a": "1"}, True),
    ("a IS NOT NULL", {}, False),
    # AND, OR, NOT: three-valued
    ("a = 1 AND b = 2", {"a": "1", "b": "2"}, True),
    ("a = 1 AND b = 2", {"a": "1"}, None),
    ("a = 1 AND b = 2", {"a": "0"}, False),
    ("a = 1 OR b = 2", {"b": "2"}, True),
    ("a = 1 OR b = 2", {"a": "0"}, None),
    ("a = 1 OR b = 2", {"a": "0", "b": "0"}, False),
    ("a > 1 OR b = 2", {"a": "x", "b": "2"}, None),  # an error anywhere fails the whole selector
    ("NOT (a = 1)", {"a": "2"}, True),
    ("NOT (a = 1)", {}, None),
    ("NOT a", {"a": "1"}, True),  # a property alone is never true (its text is not a boolean)
    ("a", {"a": "true"}, False),
    ("a OR b = 1", {}, None),
    # literals, precedence, case, comments
    ("TRUE", {}, True),
    ("FALSE", {}, False),
    ("NULL", {}, None),
    ("a = 1 OR b = 1 AND c = 1", {"a": "1"}, True),  # AND binds tighter than OR
    ("(a = 1 OR b = 1) AND c = 1", {"a": "1"}, None),
    ("a = 1 and b in ('x') Or c is not null", {"c": "z"}, True),
    ("-- comment\na /* inline */ = 1", {"a": "1"}, True),
    ("a > 5 AND TAGS IN ('x','y')", {"a": "6", "TAGS": "x"}, True),
    ("$a_1 = 'v'", {"$a_1": "v"}, True),
    ("A = 1", {"a": "1"}, None),  # property names keep their case
]


@pytest.mark.parametrize(("expression", "properties", "expected"), CASES)
def test_each_operator(expression: str, properties: dict[str, str], expected: bool | None) -> None:
    selector = compile_selector(expression)
    assert selector.evaluate(properties) is expected
    assert selector.matches(properties) is (expected is True)


REFUSED = [
    ("", "expected a value"),
    ("a >", "expected a value"),
    ("a > 'x'", "cannot be compared with < <= > >="),
    ("a > TRUE", "cannot be compared with < <= > >="),
    ("a = NULL", "use IS NULL"),
    ("TRUE = 5", "cannot be compared with"),
    ("5", "is not a condition"),
    ("'x' AND a = 1", "is not a condition"),
    ("NOT 5", "is not a condition"),
    ("NOT a > 5", "cannot be compared"),  # NOT binds tighter: write NOT (a > 5)
    ("a BETWEEN 10 AND 1", "lower bound 10 is above the upper bound 1"),
    ("a BETWEEN NULL AND 1", "cannot be NULL"),
    ("5 IN ('x')", "IN needs a property name"),
    ("a IN (1, 2)", "IN lists hold text"),
    ("a IN ()", "IN lists hold text"),
    ("a = 1 b = 2", "unexpected 'b' at column 7"),
    ("a = 1)", "unexpected ')' at column 6"),
    ("(a = 1", "expected ')'"),
    ("a # 1", "unexpected character '#' at column 3"),
    ("a = 'open", "unexpected character"),
    ("a > 0.0", "below the smallest positive double"),
    ("a > 99999999999999999999", "beyond the 64-bit range"),
    ("a > 1e999", "beyond the double range"),
    ("a IS 5", "expected NULL"),
    ("a CONTAINS 'x'", "unexpected 'CONTAINS'"),  # not in RocketMQ 4.9 (5.x added it)
    ("a STARTSWITH 'x'", "unexpected 'STARTSWITH'"),
]


@pytest.mark.parametrize(("expression", "message"), REFUSED)
def test_refused_with_a_reason(expression: str, message: str) -> None:
    with pytest.raises(FilterExpressionError, match="invalid SQL92 selector") as raised:
        compile_selector(expression)
    assert message in str(raised.value)


def test_keywords_are_case_insensitive_and_names_are_not() -> None:
    lower = compile_selector("a between 1 and 3 and b is not null or c not in ('x')")
    upper = compile_selector("a BETWEEN 1 AND 3 AND b IS NOT NULL OR c NOT IN ('x')")
    for properties in ({"a": "2", "b": "y"}, {"c": "x"}, {"c": "z"}, {}):
        assert lower.evaluate(properties) == upper.evaluate(properties)
    assert compile_selector("a > 1 AND TAGS IN ('x')").properties == {"a", "TAGS"}


def test_the_cache_keeps_selectors_and_errors() -> None:
    assert compile_cached("a = 1") is compile_cached("a = 1")
    for _ in range(2):  # the cached error is raised again, as a fresh exception
        with pytest.raises(FilterExpressionError, match="use IS NULL"):
            compile_cached("a = NULL")
