"""The filter language's one error: an expression that does not parse or cannot mean anything."""

from __future__ import annotations

from rocketq.common.errors import RocketqError


class FilterExpressionError(RocketqError, ValueError):
    """A SQL92 selector RocketMQ would refuse: bad syntax, or operands an operator cannot take
    (``a > 'x'``, ``a = NULL``, ``a BETWEEN 10 AND 1``). The message says what and where."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"invalid SQL92 selector: {reason}")
