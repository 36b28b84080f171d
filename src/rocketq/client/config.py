"""Client settings, with the Java client's defaults."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientConfig:
    namesrv_addr: str = "127.0.0.1:9876"  # "host:port;host:port"
    instance_name: str = "DEFAULT"
    client_ip: str = ""  # "" = detect
    poll_name_server_interval_s: float = 30.0
    heartbeat_broker_interval_s: float = 30.0
    request_timeout_s: float = 3.0

    @property
    def name_servers(self) -> list[str]:
        return [a.strip() for a in self.namesrv_addr.replace(",", ";").split(";") if a.strip()]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerConfig:
    group: str = "DEFAULT_PRODUCER"
    client: ClientConfig = ClientConfig()
    send_msg_timeout_s: float = 3.0
    retry_times_when_send_failed: int = 2  # sync sends: extra attempts on another broker
    retry_times_when_send_async_failed: int = 2
    compress_msg_body_over_howmuch: int = 4096  # bytes; bodies above are zlib-compressed
    compress_level: int = 5
    max_message_size: int = 4 * 1024 * 1024
    default_topic_queue_nums: int = 4
    send_latency_fault_enable: bool = True
    create_topic_key: str = "TBW102"
