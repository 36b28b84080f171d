"""NamesrvConfig: the NameServer's settings, loadable from a Java-style ``namesrv.properties``.

Keys are RocketMQ's camelCase names (``listenPort=9876``) or our snake_case field names
(``listen_port``); the mapping between the two is mechanical, plus a short alias table for
Java spellings that do not match a field name. Keys we do not use (``rocketmqHome``,
``kvConfigPath`` ...) are ignored, as Java's ``MixAll.properties2Object`` ignores them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from rocketq.common.settings import SettingError, parse_properties, settings_from_mapping
from rocketq.protocol import DEFAULT_MAX_FRAME_SIZE
from rocketq.remoting.limits import ServerLimits

# Java setting names whose snake_case form is not one of our field names.
_JAVA_ALIASES: Final = {
    "bindAddress": "listen_host",
    "serverChannelMaxIdleTimeSeconds": "idle_timeout_s",
    "writeBufferHighWaterMark": "write_buffer_high_water",
    "writeBufferLowWaterMark": "write_buffer_low_water",
    "serverFrameTimeoutSeconds": "frame_timeout_s",
    "serverMaxWorkerRequests": "max_worker_requests",
    "serverMaxBufferedRequestBytes": "max_buffered_request_bytes",
}


NamesrvConfigError = SettingError


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
    # what one client may make the NameServer hold (rocketq.remoting.limits)
    write_buffer_high_water: int = 4 * 1024 * 1024  # unsent answers at which a connection is not served
    write_buffer_low_water: int = 1024 * 1024  # ... until they drain below this
    max_worker_requests: int = 16  # a connection's requests on worker threads at once
    frame_timeout_s: float = 30.0  # a request frame not complete this long closes its connection
    max_buffered_request_bytes: int = 256 * 1024 * 1024  # partial frames held, process-wide
    shutdown_grace_s: float = 5.0  # how long aclose() lets in-flight requests finish
    # Prometheus metrics (rocketq.metrics, docs/metrics.md), with the broker's RocketMQ 5 key names:
    # PROM serves /metrics; DISABLE opens no port. The port's default is the broker's plus one, so
    # both can run on one host with their defaults.
    metrics_exporter_type: str = "DISABLE"
    metrics_prom_exporter_host: str = ""  # "": the address the NameServer listens on (listenHost)
    metrics_prom_exporter_port: int = 5558  # 0 picks a free port

    def server_limits(self) -> ServerLimits:
        return ServerLimits(
            write_buffer_high_water=self.write_buffer_high_water,
            write_buffer_low_water=self.write_buffer_low_water,
            max_worker_requests=self.max_worker_requests,
            frame_timeout_s=self.frame_timeout_s,
            idle_timeout_s=self.idle_timeout_s,
            max_buffered_request_bytes=self.max_buffered_request_bytes,
        )

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> NamesrvConfig:
        """Build a config from camelCase or snake_case keys; values may be text.

        Raises:
            NamesrvConfigError: A value cannot be converted to its field's type.
        """
        return settings_from_mapping(cls, values, _JAVA_ALIASES)

    @classmethod
    def from_file(cls, path: str | Path) -> NamesrvConfig:
        """Read a Java properties file (``key=value`` or ``key: value``, ``#``/``!`` comments).

        Raises:
            OSError: The file cannot be read.
            NamesrvConfigError: A value has the wrong type.
        """
        return cls.from_mapping(parse_properties(Path(path).read_text(encoding="utf-8")))
