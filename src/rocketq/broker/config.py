"""BrokerConfig: RocketMQ ``broker.conf`` keys (camelCase Java properties) mapped onto snake_case fields."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocketq.common.settings import parse_properties, settings_from_mapping
from rocketq.remoting.address import local_ipv4
from rocketq.store import FlushDiskType, StoreConfig

# broker.conf spellings that are not the snake_case of our field names
_ALIASES = {
    "mapedFileSizeCommitLog": "mapped_file_size_commit_log",
    "mapedFileSizeConsumeQueue": "mapped_file_size_consume_queue",
    "brokerIP1": "broker_ip1",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerConfig:
    broker_cluster_name: str = "DefaultCluster"
    broker_name: str = "broker-a"
    broker_id: int = 0  # 0 is the master
    broker_role: str = "ASYNC_MASTER"
    namesrv_addr: str = ""  # "host:port;host:port"
    listen_host: str = "0.0.0.0"
    listen_port: int = 10911
    broker_ip1: str = ""  # address advertised to clients and stored as storeHost; "" = detect
    store_path_root_dir: Path = Path.home() / "store"
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue: int = 300_000 * 20
    max_message_size: int = 4 * 1024 * 1024
    max_hash_slot_num: int = 5_000_000  # IndexFile slots
    max_index_num: int = 20_000_000  # IndexFile entries per file
    file_reserved_time: float = 72.0  # hours
    access_message_in_memory_max_ratio: int = 40  # % of RAM: older CommitLog bytes count as on disk only
    delete_when: str = "04"
    auto_create_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    default_topic_queue_nums: int = 8
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    message_delay_level: str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    register_name_server_period_ms: int = 30_000
    flush_consumer_offset_interval_ms: int = 5_000
    long_polling_enable: bool = True
    short_polling_time_mills: int = 1000
    channel_expired_timeout_ms: int = 120_000
    client_channel_scan_interval_ms: int = 10_000
    notify_consumer_ids_changed_enable: bool = True
    max_pull_bytes: int = 256 * 1024  # bytes returned by one pull (maxTransferBytesOnMessageInMemory)
    default_query_max_num: int = 32
    server_channel_max_idle_time_seconds: int = 120
    rebalance_lock_max_live_time_ms: int = 60_000  # an orderly consumer's queue lock lives this long unrenewed
    reject_transaction_message: bool = False  # refuse transactional half messages (NO_PERMISSION)
    transaction_time_out: int = 6_000  # ms: a half message is checked back once this old (transactionTimeOut)
    transaction_check_interval: int = 60_000  # ms between check rounds (transactionCheckInterval)
    transaction_check_max: int = 15  # unanswered checks before a half message is rolled back
    # rocketq-only, grouped transactions (docs/transactions.md):
    transaction_group_timeout: int = 900_000  # ms: a group's half messages without an immunity time wait this long
    transaction_group_committed_max: int = 100_000  # committed group ids remembered (a replay of older ones is not)
    transaction_group_committed_retention_hours: float = 168.0  # and for at most this long

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> BrokerConfig:
        """Build from broker.conf-style keys (camelCase or snake_case); unknown keys are ignored.

        Raises:
            SettingError: A value has the wrong type.
        """
        return settings_from_mapping(cls, values, _ALIASES)

    @classmethod
    def from_file(cls, path: Path, **overrides: Any) -> BrokerConfig:
        """Read a Java-properties ``broker.conf``, then apply ``overrides`` (None values are skipped)."""
        values: dict[str, Any] = dict(parse_properties(path.read_text(encoding="utf-8")))
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.from_mapping(values)

    @property
    def advertised_ip(self) -> str:
        return self.broker_ip1 or local_ipv4()

    @property
    def name_servers(self) -> list[str]:
        return [a.strip() for a in self.namesrv_addr.replace(",", ";").split(";") if a.strip()]

    def store_config(self) -> StoreConfig:
        return StoreConfig(
            store_path_root_dir=self.store_path_root_dir,
            mapped_file_size_commit_log=self.mapped_file_size_commit_log,
            mapped_file_size_consume_queue=self.mapped_file_size_consume_queue,
            max_hash_slot_num=self.max_hash_slot_num,
            max_index_num=self.max_index_num,
            max_message_size=self.max_message_size + 64 * 1024,  # headroom for properties and topic
            flush_disk_type=self.flush_disk_type,
            file_reserved_time_hours=self.file_reserved_time,
            delete_when=self.delete_when,
            message_delay_level=self.message_delay_level,
        )
