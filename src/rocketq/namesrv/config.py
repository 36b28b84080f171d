"""NamesrvConfig: the NameServer's settings, loadable from a Java-style ``namesrv.properties``.

Keys are RocketMQ's camelCase names (``listenPort=9876``) or our snake_case field names
(``listen_port``); the mapping between the two is mechanical, plus a short alias table for
Java spellings that do not match a field name. Keys we do not use (``rocketmqHome``,
``kvConfigPath`` ...) are ignored, as Java's ``MixAll.properties2Object`` ignores them.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, get_type_hints

from rocketq.common.errors import RocketqError
from rocketq.protocol import DEFAULT_MAX_FRAME_SIZE

log = logging.getLogger(__name__)

_CAMEL_BOUNDARY: Final = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_PROPERTY_LINE: Final = re.compile(r"\s*([^=:\s]+)\s*[=:]?\s*(.*)")
_TRUE: Final = frozenset({"true", "1", "yes", "on"})
_FALSE: Final = frozenset({"false", "0", "no", "off"})

# Java setting names whose snake_case form is not one of our field names.
_JAVA_ALIASES: Final = {
    "bindAddress": "listen_host",
    "serverChannelMaxIdleTimeSeconds": "idle_timeout_s",
}


class NamesrvConfigError(RocketqError, ValueError):
    """A setting has a value of the wrong type."""

    def __init__(self, key: str, value: object, reason: str) -> None:
        self.key = key
        self.value = value
        super().__init__(f"namesrv setting {key}={value!r}: {reason}")


def snake_case(key: str) -> str:
    """``listenPort`` -> ``listen_port``; snake_case keys come back unchanged."""
    return _JAVA_ALIASES.get(key) or _CAMEL_BOUNDARY.sub("_", key).lower()


@dataclass(frozen=True, slots=True, kw_only=True)
class NamesrvConfig:
    """Settings of one NameServer. Defaults mirror RocketMQ 4.9's."""

    listen_host: str = "0.0.0.0"
    listen_port: int = 9876  # 0 picks a free port
    scan_interval_s: float = 10.0  # how often silent brokers are looked for
    broker_expiry_s: float = 120.0  # a broker silent this long is dropped (BROKER_CHANNEL_EXPIRED_TIME)
    idle_timeout_s: float = 120.0  # connections idle this long are closed
    order_message_enable: bool = False  # fill orderTopicConf in routes from the ORDER_TOPIC_CONFIG namespace
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE  # bytes
    shutdown_grace_s: float = 5.0  # how long aclose() lets in-flight requests finish

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> NamesrvConfig:
        """Build a config from camelCase or snake_case keys; values may be text.

        Raises:
            NamesrvConfigError: A value cannot be converted to its field's type.
        """
        types = get_type_hints(cls)
        names = {field.name for field in dataclasses.fields(cls)}
        kwargs: dict[str, object] = {}
        for key, value in values.items():
            name = key if key in names else snake_case(key)
            if name not in names:
                log.debug("ignoring namesrv setting %s (not used by rocketq)", key)
                continue
            kwargs[name] = _convert(key, value, types[name])
        return cls(**kwargs)  # type: ignore[arg-type]

    @classmethod
    def from_file(cls, path: str | Path) -> NamesrvConfig:
        """Read a Java properties file (``key=value`` or ``key: value``, ``#``/``!`` comments).

        Raises:
            OSError: The file cannot be read.
            NamesrvConfigError: A value has the wrong type.
        """
        return cls.from_mapping(parse_properties(Path(path).read_text(encoding="utf-8")))


def parse_properties(text: str) -> dict[str, str]:
    """Parse the simple subset of Java properties syntax that config files use."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "!")):
            continue
        match = _PROPERTY_LINE.fullmatch(stripped)
        if match is not None:
            values[match.group(1)] = match.group(2).strip()
    return values


def _convert(key: str, value: object, kind: object) -> object:
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise NamesrvConfigError(key, value, "expected true or false")
    if kind is int or kind is float:
        if isinstance(value, bool):
            raise NamesrvConfigError(key, value, "expected a number")
        try:
            return int(str(value).strip()) if kind is int else float(str(value).strip())
        except ValueError:
            raise NamesrvConfigError(key, value, "expected a number") from None
    return str(value).strip()
