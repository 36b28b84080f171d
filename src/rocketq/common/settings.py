"""Loading settings dataclasses from Java-style properties (``broker.conf``, ``namesrv.properties``).

Keys are RocketMQ's camelCase names (``listenPort=9876``) or our snake_case field names; the mapping is
mechanical, plus an alias table for Java spellings that match no field. Keys a component does not use
are ignored, as Java's ``MixAll.properties2Object`` ignores them. Values may be text.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import re
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, TypeVar, Union, get_args, get_origin, get_type_hints

from rocketq.common.errors import RocketqError

log = logging.getLogger(__name__)

_CAMEL_BOUNDARY: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_PROPERTY_LINE: Final = re.compile(r"\s*([^=:\s]+)\s*[=:]?\s*(.*)")
_TRUE: Final = frozenset({"true", "1", "yes", "on"})
_FALSE: Final = frozenset({"false", "0", "no", "off"})

Settings = TypeVar("Settings")


class SettingError(RocketqError, ValueError):
    """A setting has a value of the wrong type."""

    def __init__(self, key: str, value: object, reason: str) -> None:
        self.key = key
        self.value = value
        super().__init__(f"setting {key}={value!r}: {reason}")


def snake_case(key: str, aliases: Mapping[str, str] | None = None) -> str:
    """``listenPort`` -> ``listen_port``; snake_case keys come back unchanged."""
    return (aliases or {}).get(key) or _CAMEL_BOUNDARY.sub("_", key).lower()


def parse_properties(text: str) -> dict[str, str]:
    """Parse the subset of Java properties syntax config files use (``k=v``, ``k: v``, ``#``/``!``)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "!")):
            continue
        match = _PROPERTY_LINE.fullmatch(stripped)
        if match is not None:
            values[match.group(1)] = match.group(2).strip()
    return values


def settings_from_mapping(
    cls: type[Settings], values: Mapping[str, object], aliases: Mapping[str, str] | None = None
) -> Settings:
    """Build the dataclass ``cls`` from camelCase or snake_case keys.

    Raises:
        SettingError: A value cannot be converted to its field's type.
    """
    types = get_type_hints(cls)
    names = {field.name for field in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        name = key if key in names else snake_case(key, aliases)
        if name not in names:
            log.debug("ignoring setting %s (not used by %s)", key, cls.__name__)
            continue
        kwargs[name] = convert_setting(key, value, types[name])
    return cls(**kwargs)


def convert_setting(key: str, value: object, kind: object) -> object:
    if isinstance(kind, type) and isinstance(value, kind):
        return value
    text = str(value).strip()
    options = get_args(kind) if get_origin(kind) in (Union, types.UnionType) else ()
    if type(None) in options:  # an optional setting: empty means unset
        if value is None or not text:
            return None
        present = [option for option in options if option is not type(None)]
        return convert_setting(key, value, present[0]) if len(present) == 1 else text
    if kind is bool:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise SettingError(key, value, "expected true or false")
    if kind is int or kind is float:
        try:
            return int(text) if kind is int else float(text)
        except ValueError:
            raise SettingError(key, value, "expected a number") from None
    if kind is Path:
        return Path(text).expanduser()
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        try:
            return kind(text.upper() if text.upper() in kind.__members__ else text)
        except ValueError:
            raise SettingError(key, value, f"expected one of {', '.join(kind.__members__)}") from None
    return text
