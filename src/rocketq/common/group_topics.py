"""The topics the broker keeps for each consumer group: its retry topic and its dead-letter topic."""

from __future__ import annotations

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"


def retry_topic(group: str) -> str:
    """Where the group's failed messages wait for redelivery (every member subscribes to it)."""
    return RETRY_PREFIX + group


def dlq_topic(group: str) -> str:
    """Where the group's messages go after their last retry (nobody consumes it unless asked)."""
    return DLQ_PREFIX + group
