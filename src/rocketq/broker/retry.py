"""Where a message a consumer failed to consume goes next (CONSUMER_SEND_MSG_BACK): pure decisions.

A failed message is copied to ``%RETRY%<group>`` with a delay of level ``3 + reconsumeTimes`` (unless
the consumer asked for a level), or to ``%DLQ%<group>`` at once when it has already been reconsumed
the maximum number of times or the consumer asked for a negative level
(docs/protocol.md#consumer_send_msg_back-36, docs/architecture.md#retries-and-dead-letters).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rocketq.common.message import Property

V3_4_9 = 121  # from this client version on, a maxReconsumeTimes in the request header is honoured
RETRY_DELAY_LEVEL_BASE = 3  # the first retry waits at level 3 (10 s with the default table)


@dataclass(frozen=True, slots=True, kw_only=True)
class SendBackPlan:
    dead_letter: bool  # True: to %DLQ%<group>, undelayed; False: to %RETRY%<group>, delayed
    delay_level: int  # 0 for a dead letter
    reconsume_times: int  # the copy's count: the failed message's plus one


def plan_send_back(reconsume_times: int, requested_delay_level: int, max_reconsume_times: int) -> SendBackPlan:
    """Decide the copy of a message that has been reconsumed ``reconsume_times`` times.

    ``requested_delay_level`` is the consumer's: 0 lets the broker choose, below 0 means "dead letter
    now". As in RocketMQ the test is on the failed message's count, so with a maximum of 16 a message
    is retried 16 times before it becomes a dead letter.
    """
    new_count = reconsume_times + 1
    if reconsume_times >= max_reconsume_times or requested_delay_level < 0:
        return SendBackPlan(dead_letter=True, delay_level=0, reconsume_times=new_count)
    level = requested_delay_level or RETRY_DELAY_LEVEL_BASE + reconsume_times
    return SendBackPlan(dead_letter=False, delay_level=level, reconsume_times=new_count)


def send_back_properties(
    properties: Mapping[str, str], original_topic: str, original_message_id: str, plan: SendBackPlan
) -> dict[str, str]:
    """The copy's properties: ``RETRY_TOPIC`` and ``ORIGIN_MESSAGE_ID`` are set only when absent, so
    they keep naming the first topic and message through every retry; ``DELAY`` is the plan's level
    (none for a dead letter); everything else (``UNIQ_KEY``, ``KEYS``, ``TAGS`` ...) is kept."""
    copy = dict(properties)
    if not copy.get(Property.RETRY_TOPIC):
        copy[Property.RETRY_TOPIC] = original_topic
    if not copy.get(Property.ORIGIN_MESSAGE_ID):
        copy[Property.ORIGIN_MESSAGE_ID] = original_message_id
    copy.pop(Property.REAL_TOPIC, None)
    copy.pop(Property.REAL_QUEUE_ID, None)
    if plan.dead_letter:
        copy.pop(Property.DELAY_TIME_LEVEL, None)
    else:
        copy[Property.DELAY_TIME_LEVEL] = str(plan.delay_level)
    return copy
