"""MessageSelector: which messages of a topic a subscription wants, by tag or by a SQL92 expression
over the message's properties (RocketMQ's ``MessageSelector``). The broker does the filtering."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

TAG: Final = "TAG"
SQL92: Final = "SQL92"
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
        if self.expression_type == SQL92 and not self.expression.strip():
            raise ValueError("a SQL92 selector needs an expression")

    @classmethod
    def by_tag(cls, expression: str = MATCH_ALL) -> MessageSelector:
        """Messages whose tag is one of ``"TagA || TagB"``; ``"*"`` (or empty) is every message."""
        return cls(TAG, expression.strip() or MATCH_ALL)

    @classmethod
    def by_sql(cls, expression: str) -> MessageSelector:
        """Messages whose properties (and ``TAGS``) make the SQL92 ``expression`` true."""
        return cls(SQL92, expression.strip())

    @classmethod
    def of(cls, selector: MessageSelector | str) -> MessageSelector:
        """A selector as given, or a tag expression given as text."""
        return selector if isinstance(selector, MessageSelector) else cls.by_tag(selector)
