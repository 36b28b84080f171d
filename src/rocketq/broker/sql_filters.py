"""How the broker takes SQL92 subscriptions: whether it accepts one (heartbeats, CHECK_CLIENT_CONFIG,
pulls) and the store filter a pull reads through.

A pull is filtered by its own expression, compiled once per text (``compile_cached``); when the group
registered the same expression for the topic and the dispatcher computes bit maps, the pull also
skips by the registered subscription's bloom bits, reading only messages that may match.
"""

from __future__ import annotations

from rocketq.broker.config import BrokerConfig
from rocketq.broker.consumer_filters import ConsumerFilterManager
from rocketq.filter import SQL92, FilterExpressionError, Selector, compile_cached, is_tag_type
from rocketq.protocol import ResponseCode
from rocketq.store.message_filter import BitMapFilter, MessageFilter


def refusal(config: BrokerConfig, expression_type: str, expression: str) -> tuple[int, str] | None:
    """Why the broker refuses a subscription (response code and remark), or None when it takes it."""
    if is_tag_type(expression_type):
        return None
    if expression_type != SQL92:
        return ResponseCode.SUBSCRIPTION_PARSE_FAILED, f"expression type {expression_type!r} is not supported"
    if not config.enable_property_filter:
        return (
            ResponseCode.SYSTEM_ERROR,
            "The broker does not support consumer to filter message by SQL92 (enablePropertyFilter=false)",
        )
    try:
        compile_cached(expression)
    except FilterExpressionError as exc:
        return ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc)
    return None


def pull_filter(
    config: BrokerConfig, filters: ConsumerFilterManager, group: str, topic: str, selector: Selector
) -> MessageFilter:
    """The store filter of one SQL92 pull (its selector already compiled)."""
    bit_map = None
    data = filters.get(topic, group)
    if (
        config.enable_calc_filter_bit_map
        and data is not None
        and data.expression == selector.expression
        and data.born_offset >= 0
        and filters.bloom.is_valid(data.bloom)
    ):
        bit_map = BitMapFilter(data.bloom.byte_masks(), filters.bloom.bit_map_bytes, data.born_offset)
    return MessageFilter(properties_match=selector.matches, bit_map=bit_map)
