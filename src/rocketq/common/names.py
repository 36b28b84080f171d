"""What topic and group names and a message's properties may hold: RocketMQ's name rules, and what
its property encoding can carry.

Pure checks that return the problem as text (None when there is none), so the broker can answer with
it and a client can raise it before anything is sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from rocketq.common.message import (
    CHECK_MAX_TOPIC,
    HALF_TOPIC,
    NAME_VALUE_SEPARATOR,
    OP_TOPIC,
    PROPERTY_SEPARATOR,
    SCHEDULE_TOPIC,
)

TOPIC_MAX_LENGTH: Final = 127
GROUP_MAX_LENGTH: Final = 255
NAME_CHARACTERS: Final = "[%|a-zA-Z0-9_-]"
_VALID_NAME: Final = re.compile(f"{NAME_CHARACTERS}+")  # used with fullmatch: "$" would allow a final newline

NOT_SENDABLE_TOPICS: Final = frozenset([SCHEDULE_TOPIC, HALF_TOPIC, OP_TOPIC, CHECK_MAX_TOPIC])
"""Topics the broker writes itself: a message sent there directly would be read as one of its own."""


def topic_name_problem(topic: str) -> str | None:
    """Why ``topic`` is not a valid topic name, or None."""
    return _name_problem("topic", topic, TOPIC_MAX_LENGTH)


def group_name_problem(group: str) -> str | None:
    """Why ``group`` is not a valid producer or consumer group name, or None."""
    return _name_problem("group", group, GROUP_MAX_LENGTH)


def _name_problem(kind: str, name: str, max_length: int) -> str | None:
    if not name:
        return f"the {kind} name is empty"
    if len(name) > max_length:
        return f"the {kind} name is longer than {max_length} characters: {name[:40]}..."
    if not _VALID_NAME.fullmatch(name):
        return f"the {kind} name {name!r} contains characters outside {NAME_CHARACTERS}"
    return None


def empty_property_problem(user_properties: Mapping[str, str]) -> str | None:
    """Why a user property would be dropped on the way (an empty name or value), or None."""
    for name, value in user_properties.items():
        if not name or not value:
            return f"the property {name!r} has an empty name or value"
    return None


def separator_problem(properties: Mapping[str, str], text: str) -> str | None:
    """Why ``text``, ``encode_properties(properties)`` of names and values that are not empty, does not
    carry them intact, or None. Each entry brings one name-value separator and the entries are joined by
    property separators, so any more of either means a name or value (tags and keys included) holds
    one and would be cut apart. Two counts in C per message; the entry is looked for only then."""
    count = len(properties)
    if text.count(NAME_VALUE_SEPARATOR) == count and text.count(PROPERTY_SEPARATOR) == (count - 1 if count else 0):
        return None
    for name, value in properties.items():
        for separator in (NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR):
            if separator in name or separator in value:
                return f"the property {name!r} holds {separator!r}, which separates properties on the wire"
    return "a property has an empty name or value"
