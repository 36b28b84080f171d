"""Message filters shared by the broker and the clients: RocketMQ's SQL92 selectors over message
properties (``rocketq.filter.evaluate``: grammar, NULL and type rules) and the bloom filter the broker
uses to skip messages a subscription cannot match (``rocketq.filter.bloom``).

Imports only ``rocketq.common``, so clients validate a selector before sending it and the broker
evaluates it with the same code.
"""

from __future__ import annotations

from typing import Final

from rocketq.filter.errors import FilterExpressionError
from rocketq.filter.evaluate import Selector, compile_cached, compile_selector

TAG: Final = "TAG"
SQL92: Final = "SQL92"


def is_tag_type(expression_type: str | None) -> bool:
    """RocketMQ's ``ExpressionType.isTagType``: no type (older clients send none) or ``TAG``."""
    return not expression_type or expression_type == TAG


__all__ = [
    "SQL92",
    "TAG",
    "FilterExpressionError",
    "Selector",
    "compile_cached",
    "compile_selector",
    "is_tag_type",
]
