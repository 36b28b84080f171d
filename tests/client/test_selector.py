"""MessageSelector: the two expression types and what each accepts."""

import pytest

from rocketq.client import MessageSelector


def test_by_tag_defaults_to_every_message() -> None:
    assert MessageSelector.by_tag() == MessageSelector("TAG", "*")
    assert MessageSelector.by_tag("  ") == MessageSelector("TAG", "*")
    assert MessageSelector.of("TagA || TagB") == MessageSelector("TAG", "TagA || TagB")


def test_by_sql_keeps_the_expression() -> None:
    selector = MessageSelector.by_sql(" a > 5 AND TAGS IN ('x') ")
    assert (selector.expression_type, selector.expression) == ("SQL92", "a > 5 AND TAGS IN ('x')")
    assert MessageSelector.of(selector) is selector


def test_bad_selectors_are_refused() -> None:
    with pytest.raises(ValueError, match="needs an expression"):
        MessageSelector.by_sql(" ")
    with pytest.raises(ValueError, match="TAG or SQL92"):
        MessageSelector("XPATH", "/a")
