"""MessageSelector: which messages of a topic a subscription wants, by tag or by a SQL92 expression
over the message's properties (RocketMQ's ``MessageSelector``). The broker does the filtering; a SQL92
expression is checked here first, with the broker's own parser (``rocketq.filter``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from rocketq.filter import SQL92, TAG, compile_cached

MATCH_ALL: Final = "*"


@dataclass(frozen=True, slots=True)
class MessageSelector:
    """``MessageSelector.by_tag("TagA || TagB")`` or ``MessageSelector.by_sql("a > 5 AND TAGS IN ('x')")``.

    ``expression_type`` is what the pull request and the heartbeat's subscription carry as
    ``expressionType``: ``"TAG"`` or ``"SQL92"``."""

    expression_type: str
    expression: str

    def __post_init__(self) -> None:
        if self.expression_type not in (TAG, SQL92):
            raise ValueError(f"expression type must be {TAG} or {SQL92}, not {self.expression_type!r}")
        if self.expression_type == SQL92:
            if not self.expression.strip():
                raise ValueError("a SQL92 selector needs an expression")
            compile_cached(self.expression)  # FilterExpressionError (a ValueError) says what is wrong

    @classmethod
    def by_tag(cls, expression: str = MATCH_ALL) -> MessageSelector:
        """Messages whose tag is one of ``"TagA || TagB"``; ``"*"`` (or empty) is every message."""
        return cls(TAG, expression.strip() or MATCH_ALL)

    @classmethod
    def by_sql(cls, expression: str) -> MessageSelector:
        """Messages whose properties (and ``TAGS``) make the SQL92 ``expression`` true (docs/filters.md).

        Raises:
            FilterExpressionError: The expression does not parse; the message says why and where.
        """
        return cls(SQL92, expression.strip())

    @classmethod
    def of(cls, selector: MessageSelector | str) -> MessageSelector:
        """A selector as given, or a tag expression given as text."""
        return selector if isinstance(selector, MessageSelector) else cls.by_tag(selector)

    @property
    def is_tag(self) -> bool:
        return self.expression_type == TAG

    def tags(self) -> frozenset[str]:
        """The tags a tag selector keeps (empty: all, and for SQL92: the broker decides alone)."""
        if not self.is_tag:
            return frozenset()
        tags = frozenset(part.strip() for part in self.expression.split("||") if part.strip())
        return frozenset() if MATCH_ALL in tags else tags
