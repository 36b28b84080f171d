"""Loading settings dataclasses from Java-style properties (``broker.conf``, ``namesrv.properties``).

Keys are RocketMQ's camelCase names (``listenPort=9876``) or our snake_case field names; the mapping is
mechanical, plus an alias table for Java spellings that match no field. Values may be text. A key no
setting uses is not dropped in silence (Java's ``MixAll.properties2Object`` does): the component names it
in a WARNING, with the closest known key when it looks misspelled (``unknown_settings_warning``).
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import logging
import re
import types
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, TypeVar, Union, get_args, get_origin, get_type_hints

from rocketq.common.errors import RocketqError

log = logging.getLogger(__name__)

_CAMEL_BOUNDARY: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_TRUE: Final = frozenset({"true", "1", "yes", "on"})
_FALSE: Final = frozenset({"false", "0", "no", "off"})

Settings = TypeVar("Settings")


class SettingError(RocketqError, ValueError):
    """A setting has a value of the wrong type, or one rocketq cannot honour."""

    def __init__(self, key: str, value: object, reason: str) -> None:
        self.key = key
        self.value = value
        super().__init__(f"setting {key}={value!r}: {reason}")


def snake_case(key: str, aliases: Mapping[str, str] | None = None) -> str:
    """``listenPort`` -> ``listen_port``; snake_case keys come back unchanged."""
    return (aliases or {}).get(key) or _CAMEL_BOUNDARY.sub("_", key).lower()


def camel_case(name: str) -> str:
    """``listen_port`` -> ``listenPort`` (the spelling broker.conf files use)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def parse_properties(text: str) -> dict[str, str]:
    """A Java ``.properties`` text in its full syntax: ``=``, ``:`` or whitespace between key and value,
    ``#``/``!`` comments, lines continued with a trailing backslash, ``\\uXXXX`` and other escapes.
    A key given twice keeps its last value, as in Java."""
    import javaproperties  # a server dependency: client-only installs (rocketq admin) never read a file

    return dict(javaproperties.loads(text))


def split_settings(
    cls: type[Any], values: Mapping[str, object], aliases: Mapping[str, str] | None = None
) -> tuple[dict[str, Any], dict[str, object]]:
    """(``cls``'s fields set by ``values``, converted to their types; the keys ``cls`` has no field for).

    Raises:
        SettingError: A value cannot be converted to its field's type.
    """
    types = get_type_hints(cls)
    names = {field.name for field in dataclasses.fields(cls)}
    fields: dict[str, Any] = {}
    rest: dict[str, object] = {}
    for key, value in values.items():
        name = key if key in names else snake_case(key, aliases)
        if name in names:
            fields[name] = convert_setting(key, value, types[name])
        else:
            rest[key] = value
    return fields, rest


def settings_from_mapping(
    cls: type[Settings], values: Mapping[str, object], aliases: Mapping[str, str] | None = None
) -> Settings:
    """Build the dataclass ``cls`` from camelCase or snake_case keys; keys it has no field for are named
    in a WARNING.

    Raises:
        SettingError: A value cannot be converted to its field's type.
    """
    fields, rest = split_settings(cls, values, aliases)
    if rest:
        log.warning("%s", unknown_settings_warning(rest, known_keys(cls, aliases)))
    return cls(**fields)


def known_keys(cls: type[Any], aliases: Mapping[str, str] | None = None) -> list[str]:
    """The camelCase keys ``cls`` reads: its fields' names, and the Java spellings in ``aliases``."""
    return sorted({*(camel_case(field.name) for field in dataclasses.fields(cls)), *(aliases or {})})


def unknown_settings_warning(keys: Iterable[str], known: Iterable[str]) -> str:
    """One line naming the keys rocketq does not implement, each with the closest known key when it
    looks like a misspelling of one."""
    known_list = list(known)
    by_lower = {key.lower(): key for key in known_list}
    named = []
    for key in sorted(keys):
        close = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.8)
        named.append(f"{key} (did you mean {by_lower[close[0]]}?)" if close else key)
    return f"settings not implemented by rocketq, ignored: {', '.join(named)}"


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
