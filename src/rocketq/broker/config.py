"""BrokerConfig: RocketMQ ``broker.conf`` keys (camelCase Java properties) mapped onto snake_case fields.

One path from a broker.conf to the code that uses each key: a key is a field of ``BrokerConfig`` (the
broker's own settings, and the store settings RocketMQ spells differently, in percent or without a unit),
else a field of ``StoreConfig`` (kept in ``store_settings`` and applied by ``store_config()``), else not
implemented: named in a WARNING at start. A value rocketq cannot honour (a slave with brokerId 0) is refused.
docs/configuration.md lists the keys.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from rocketq.common.settings import (
    SettingError,
    camel_case,
    known_keys,
    parse_properties,
    split_settings,
    unknown_settings_warning,
)
from rocketq.filter.bloom import BloomFilter
from rocketq.remoting.address import local_ipv4
from rocketq.remoting.limits import ServerLimits
from rocketq.store import FlushDiskType, StoreConfig

log = logging.getLogger(__name__)

# broker.conf spellings that are not the snake_case of our field names
_ALIASES = {
    "mapedFileSizeCommitLog": "mapped_file_size_commit_log",
    "mapedFileSizeConsumeQueue": "mapped_file_size_consume_queue",
    "brokerIP1": "broker_ip1",
    "bindAddress": "listen_host",  # RocketMQ 5's name for it
    "flushConsumerOffsetInterval": "flush_consumer_offset_interval_ms",
    "registerNameServerPeriod": "register_name_server_period_ms",
    "maxTransferBytesOnMessageInMemory": "max_pull_bytes",
}

# StoreConfig fields that store_config() derives from BrokerConfig fields (their broker.conf keys are
# BrokerConfig's); every other StoreConfig field is set by its own key through ``store_settings``
_STORE_FIELDS_FROM_BROKER: Final = frozenset(
    {
        "store_path_root_dir",
        "mapped_file_size_commit_log",
        "mapped_file_size_consume_queue",
        "max_hash_slot_num",
        "max_index_num",
        "max_message_size",
        "flush_disk_type",
        "file_reserved_time_hours",
        "delete_when",
        "disk_max_used_space_ratio",
        "disk_space_clean_forcibly_ratio",
        "clean_file_forcibly_enable",
        "clean_unconsumed_under_pressure",
        "disk_space_warning_level_ratio",
        "clean_resource_interval_ms",
        "message_delay_level",
        "enable_consume_queue_ext",
        "mapped_file_size_consume_queue_ext",
        "bit_map_length_consume_queue_ext",
    }
)
_UNIT_SUFFIX: Final = re.compile(r"_(ms|hours)$")


def _store_keys() -> dict[str, str]:
    """broker.conf key -> StoreConfig field, for the fields set by their own key: the camelCase of the
    field's name without its unit (``flush_interval_commit_log_ms``: ``flushIntervalCommitLog``)."""
    keys = {"checkCRCOnRecover": "check_crc_on_recover"}  # (RocketMQ's capitals)
    for field in dataclasses.fields(StoreConfig):
        if field.name not in _STORE_FIELDS_FROM_BROKER and field.name != "check_crc_on_recover":
            bare = _UNIT_SUFFIX.sub("", field.name)
            keys[camel_case(bare)] = keys[bare] = field.name
    return keys


_STORE_KEYS: Final = _store_keys()


class BrokerRole(enum.Enum):
    """RocketMQ's broker roles (docs/replication.md)."""

    ASYNC_MASTER = "ASYNC_MASTER"  # streams its CommitLog to slaves, acknowledges puts without them
    SYNC_MASTER = "SYNC_MASTER"  # a put is acknowledged once a slave has it
    SLAVE = "SLAVE"  # follows its master's CommitLog, refuses sends


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerConfig:
    broker_cluster_name: str = "DefaultCluster"
    broker_name: str = "broker-a"
    broker_id: int = 0  # 0 is the master
    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER  # a SLAVE has a brokerId > 0, a master 0
    namesrv_addr: str = ""  # "host:port;host:port"
    listen_host: str = "0.0.0.0"  # all interfaces, as RocketMQ; a WARNING at start without ACL (docs/acl.md)
    listen_port: int = 10911
    broker_ip1: str = ""  # address advertised to clients and stored as storeHost; "" = detect
    store_path_root_dir: Path = Path.home() / "store"
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue: int = 300_000 * 20
    max_message_size: int = 4 * 1024 * 1024
    max_hash_slot_num: int = 5_000_000  # IndexFile slots
    max_index_num: int = 20_000_000  # IndexFile entries per file
    access_message_in_memory_max_ratio: int = 40  # % of RAM: older CommitLog bytes count as on disk only
    # reads from slaves (docs/replication.md#reads-from-slaves): a master sends every pull to a connected
    # slave, a slave keeps the pulls it serves (off: a master suggests a slave only to consumers lagging by
    # more than accessMessageInMemoryMaxRatio of RAM, and a slave sends its consumers back to the master)
    slave_read_enable: bool = False
    # retention and disk space (docs/operations.md#disk-space); ratios in percent of the store's disk
    file_reserved_time: float = 72.0  # hours a CommitLog file is kept
    delete_when: str = "04"  # hours of day ("04", "02;04") when expired files are deleted
    disk_max_used_space_ratio: int = 75  # above it expired files are deleted at any hour (10..95)
    disk_space_clean_forcibly_ratio: int = 85  # above it files go before they expire, if consumed...
    clean_file_forcibly_enable: bool = True  # ...when this allows it
    disk_space_warning_level_ratio: int = 90  # above it sends are refused
    clean_resource_interval: int = 10_000  # ms between retention runs
    # rocketq-only: let disk pressure delete files holding messages a group has not consumed yet (the
    # default refuses sends instead, saying which group is behind)
    clean_unconsumed_under_pressure: bool = False
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
    pull_bytes_limit: int = 8 * 1024 * 1024  # the most a pull asking for more (rocketq's rqMaxBytes) gets
    default_query_max_num: int = 32
    server_channel_max_idle_time_seconds: int = 120
    # what one client may make the broker hold (rocketq.remoting.limits)
    write_buffer_high_water_mark: int = 4 * 1024 * 1024  # unsent answers at which a connection is not served
    write_buffer_low_water_mark: int = 1024 * 1024  # ... until they drain below this
    server_max_worker_requests: int = 16  # a connection's requests on worker threads (queries) at once
    server_frame_timeout_seconds: float = 30.0  # a request frame not complete this long closes its connection
    server_max_buffered_request_bytes: int = 256 * 1024 * 1024  # partial frames held, process-wide
    rebalance_lock_max_live_time_ms: int = 60_000  # an orderly consumer's queue lock lives this long unrenewed
    # rocketq-only: a send marked idempotent is stored once within this window (0: off); the results of the
    # last idempotent stores are kept in memory up to the maximum, older ones are found through the index
    idempotent_send_window_ms: int = 600_000
    idempotent_send_max_entries: int = 100_000
    # SQL92 filters (docs/filters.md): accepted only when enabled, as in RocketMQ
    enable_property_filter: bool = False
    enable_calc_filter_bit_map: bool = False  # bloom bits per message at dispatch (needs the ext below)
    expect_consumer_num_use_filter: int = 32  # bloom filter size: subscriptions expected per topic...
    max_error_rate_of_bloom_filter: int = 20  # ...and the false-positive rate in percent
    filter_data_clean_time_span: int = 24 * 3600 * 1000  # ms a gone group's filter data is kept
    enable_consume_queue_ext: bool = False  # consumequeue_ext/ files beside the ConsumeQueues
    mapped_file_size_consume_queue_ext: int = 48 * 1024 * 1024
    # (the bit maps' length, bitMapLengthConsumeQueueExt, is derived from the bloom filter, as in RocketMQ)
    # access control (rocketq.broker.acl, docs/acl.md)
    acl_enable: bool = False  # check every request against acl_file's accounts (RocketMQ's aclEnable)
    acl_file: Path | None = None  # a plain_acl.yml; from_file: "plain_acl.yml" beside the broker.conf
    acl_file_check_interval_ms: int = 1000  # how often the file's modification time is looked at
    reject_transaction_message: bool = False  # refuse transactional half messages (NO_PERMISSION)
    transaction_time_out: int = 6_000  # ms: a half message is checked back once this old (transactionTimeOut)
    transaction_check_interval: int = 60_000  # ms between check rounds (transactionCheckInterval)
    transaction_check_max: int = 15  # unanswered checks before a half message is rolled back
    # rocketq-only, grouped transactions (docs/transactions.md):
    transaction_group_timeout: int = 900_000  # ms: a group's half messages without an immunity time wait this long
    transaction_group_committed_max: int = 100_000  # committed group ids remembered (a replay of older ones is not)
    transaction_group_committed_retention_hours: float = 168.0  # and for at most this long
    # Prometheus metrics (rocketq.metrics, docs/metrics.md), RocketMQ 5's keys: PROM serves /metrics;
    # DISABLE opens no port
    metrics_exporter_type: str = "DISABLE"
    metrics_prom_exporter_host: str = ""  # "": the address the broker listens on (listenHost)
    metrics_prom_exporter_port: int = 5557  # 0 picks a free port
    # replication (rocketq.replication, docs/replication.md)
    ha_listen_port: int = -1  # the HA service's port; -1: listenPort + 1 (a free one when listenPort is 0)
    ha_master_address: str = ""  # a slave's master HA "host:port"; "": learnt from the NameServer
    ha_send_heartbeat_interval: int = 5_000  # ms: a slave reports (and an idle master says so) this often
    ha_housekeeping_interval: int = 20_000  # ms: an HA peer silent this long is dropped
    ha_transfer_batch_size: int = 1024 * 1024  # CommitLog bytes per frame to a slave (RocketMQ's: 32 KiB)
    ha_slave_fallbehind_max: int = 256 * 1024 * 1024  # SYNC_MASTER: a slave further behind is not available
    # rocketq-only: automatic failover through etcd (rocketq.failover, docs/failover.md); off by default
    failover_enable: bool = False  # brokerRole is then the kind of master this broker is while it leads
    failover_etcd_endpoints: str = ""  # "http://host:2379;http://host2:2379"
    failover_etcd_prefix: str = "/rocketq"  # the group's keys are under <prefix>/<cluster>/<brokerName>/
    failover_lease_ttl: int = 3  # seconds: a master that stops renewing its lease is replaced after this
    failover_check_interval: int = 500  # ms between looks at etcd (and renewals, at most a third of the TTL)
    # StoreConfig fields set by their own broker.conf key (flushIntervalCommitLog, messageIndexEnable ...),
    # by field name; store_config() applies them
    store_settings: Mapping[str, Any] = dataclasses.field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        """Raises SettingError for a value rocketq cannot honour."""
        if self.broker_role is BrokerRole.SLAVE and self.broker_id <= 0:
            raise SettingError("brokerRole", "SLAVE", f"a SLAVE needs a brokerId above 0, not {self.broker_id}")
        if self.failover_enable:
            self._check_failover()
        elif self.broker_role is not BrokerRole.SLAVE and self.broker_id != 0:
            raise SettingError(
                "brokerId", self.broker_id, f"a {self.broker_role.value} has brokerId 0 (above 0 is a SLAVE's)"
            )
        if not -1 <= self.ha_listen_port <= 65535:
            raise SettingError(
                "haListenPort", self.ha_listen_port, "expected a port number, 0..65535 (-1: listenPort+1)"
            )
        if not 0 <= self.listen_port <= 65535:
            raise SettingError("listenPort", self.listen_port, "expected a port number, 0..65535")
        if not re.fullmatch(r"(?:[01]?\d|2[0-3])(?:;(?:[01]?\d|2[0-3]))*", self.delete_when):
            raise SettingError("deleteWhen", self.delete_when, 'expected hours of the day, "04" or "02;04"')
        unknown = self.store_settings.keys() - _STORE_KEYS.values()
        if unknown:
            raise SettingError("store_settings", sorted(unknown), "not StoreConfig fields set by their own key")

    def _check_failover(self) -> None:
        if not self.failover_etcd_endpoints.strip():
            raise SettingError("failoverEtcdEndpoints", "", "failoverEnable=true needs etcd's client URLs")
        if not 1 <= self.failover_lease_ttl <= 600:
            raise SettingError("failoverLeaseTtl", self.failover_lease_ttl, "expected seconds, 1..600")
        if not 50 <= self.failover_check_interval <= self.failover_lease_ttl * 1000 // 2:
            raise SettingError(
                "failoverCheckInterval", self.failover_check_interval, "expected ms, 50 up to half of failoverLeaseTtl"
            )

    def check_failover_member(self) -> None:
        """Raises SettingError unless this broker.conf makes a failover group member: failoverEnable, a
        brokerId above 0 (its own number, registered while it follows; it registers as 0 while it
        leads) and a master's brokerRole (how it acknowledges sends while it leads)."""
        if self.broker_id <= 0:
            raise SettingError(
                "brokerId", self.broker_id, "with failoverEnable every broker of a group has its own brokerId, 1, 2 ..."
            )
        if self.broker_role is BrokerRole.SLAVE:
            raise SettingError(
                "brokerRole",
                "SLAVE",
                "with failoverEnable any broker may lead: brokerRole is ASYNC_MASTER or SYNC_MASTER, how it"
                " acknowledges sends while it does",
            )

    @property
    def failover_endpoints(self) -> list[str]:
        return [a.strip() for a in self.failover_etcd_endpoints.replace(",", ";").split(";") if a.strip()]

    @classmethod
    def known_keys(cls) -> list[str]:
        """Every broker.conf key rocketq implements (camelCase)."""
        broker = known_keys(cls, _ALIASES)
        store = [key for key in _STORE_KEYS if "_" not in key]
        return sorted({*broker, *store} - {"storeSettings"})

    def properties(self) -> dict[str, str]:
        """Every setting under its broker.conf key (RocketMQ's spelling where it has its own), its value
        as broker.conf writes it; the store's settings included."""
        names = {field: key for key, field in _ALIASES.items() if not key.startswith("maped") and key != "bindAddress"}
        table: dict[str, str] = {}
        for field in dataclasses.fields(self):
            if field.name != "store_settings":
                table[names.get(field.name) or camel_case(field.name)] = _property_text(getattr(self, field.name))
        store = self.store_config()
        for key, field_name in _STORE_KEYS.items():
            if "_" not in key:
                table[key] = _property_text(getattr(store, field_name))
        return dict(sorted(table.items()))

    def updated(self, key: str, value: str) -> BrokerConfig:
        """This config with broker.conf key ``key`` set to ``value`` (converted to its type).

        Raises:
            SettingError: ``key`` is no setting, or ``value`` does not fit it.
        """
        fields, rest = split_settings(type(self), {key: value}, _ALIASES)
        if rest:
            raise SettingError(key, value, "no such broker setting")
        return dataclasses.replace(self, **fields)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> BrokerConfig:
        """Build from broker.conf-style keys (camelCase or snake_case). Keys rocketq does not implement
        are named in one WARNING (with the closest known key when one looks misspelled).

        Raises:
            SettingError: A value has the wrong type, or one rocketq cannot honour.
        """
        values = dict(values)
        store: dict[str, Any] = dict(values.pop("store_settings", None) or {})
        fields, rest = split_settings(cls, values, _ALIASES)
        unknown: dict[str, object] = {}
        for key, value in rest.items():
            field = _STORE_KEYS.get(key)
            if field is None:
                unknown[key] = value
            else:
                store.update(split_settings(StoreConfig, {field: value})[0])
        if unknown:
            log.warning("%s", unknown_settings_warning(unknown, cls.known_keys()))
        return cls(**fields, store_settings=store)

    @classmethod
    def from_file(cls, path: Path, **overrides: Any) -> BrokerConfig:
        """Read a Java-properties ``broker.conf``, then apply ``overrides`` (None values are skipped)."""
        return cls.load(path, overrides=overrides)

    @classmethod
    def load(
        cls,
        path: Path | None,
        defaults: Mapping[str, object] | None = None,
        overrides: Mapping[str, object | None] | None = None,
    ) -> BrokerConfig:
        """``defaults``, then the keys of the broker.conf at ``path`` (when given), then ``overrides`` (the
        command line's; None values are not given). ``aclFile`` defaults to ``plain_acl.yml`` in the folder
        of ``path``, and a relative one is taken from there.

        Raises:
            OSError: The file cannot be read.
            SettingError: A value has the wrong type, or one rocketq cannot honour.
        """
        layers = [defaults or {}, parse_properties(path.read_text(encoding="utf-8")) if path else {}]
        layers.append({key: value for key, value in (overrides or {}).items() if value is not None})
        merged: dict[str, object] = {}
        for layer in layers:
            for key, value in layer.items():
                merged.pop(key, None)  # (a later layer's key comes last, so it wins over another spelling)
                merged[key] = value
        config = cls.from_mapping(merged)
        if path is None:
            return config
        return dataclasses.replace(config, acl_file=path.parent / (config.acl_file or "plain_acl.yml"))

    @property
    def advertised_ip(self) -> str:
        """``brokerIP1``; else the address listened on, when it is one; else this host's address."""
        if self.broker_ip1:
            return self.broker_ip1
        host = self.listen_host.strip()
        if host in ("", "0.0.0.0", "::"):
            return local_ipv4()
        return "127.0.0.1" if host == "localhost" else host

    @property
    def is_slave(self) -> bool:
        return self.broker_role is BrokerRole.SLAVE

    def ha_port(self, listening_port: int) -> int:
        """The HA service's port to listen on, the broker listening on ``listening_port``: 0 picks one."""
        if self.ha_listen_port >= 0:
            return self.ha_listen_port
        return 0 if self.listen_port == 0 else listening_port + 1

    @property
    def name_servers(self) -> list[str]:
        return [a.strip() for a in self.namesrv_addr.replace(",", ";").split(";") if a.strip()]

    def server_limits(self) -> ServerLimits:
        return ServerLimits(
            write_buffer_high_water=self.write_buffer_high_water_mark,
            write_buffer_low_water=self.write_buffer_low_water_mark,
            max_worker_requests=self.server_max_worker_requests,
            frame_timeout_s=self.server_frame_timeout_seconds,
            idle_timeout_s=self.server_channel_max_idle_time_seconds,
            max_buffered_request_bytes=self.server_max_buffered_request_bytes,
        )

    def store_config(self) -> StoreConfig:
        """The store's settings: those derived from this config's fields, then ``store_settings``."""
        return StoreConfig(
            **self.store_settings,
            store_path_root_dir=self.store_path_root_dir,
            mapped_file_size_commit_log=self.mapped_file_size_commit_log,
            mapped_file_size_consume_queue=self.mapped_file_size_consume_queue,
            max_hash_slot_num=self.max_hash_slot_num,
            max_index_num=self.max_index_num,
            max_message_size=self.max_message_size + 64 * 1024,  # headroom for properties and topic
            flush_disk_type=self.flush_disk_type,
            file_reserved_time_hours=self.file_reserved_time,
            delete_when=self.delete_when,
            disk_max_used_space_ratio=min(max(self.disk_max_used_space_ratio, 10), 95) / 100,  # RocketMQ's bounds
            disk_space_clean_forcibly_ratio=self.disk_space_clean_forcibly_ratio / 100,
            clean_file_forcibly_enable=self.clean_file_forcibly_enable,
            clean_unconsumed_under_pressure=self.clean_unconsumed_under_pressure,
            disk_space_warning_level_ratio=self.disk_space_warning_level_ratio / 100,
            clean_resource_interval_ms=self.clean_resource_interval,
            message_delay_level=self.message_delay_level,
            enable_consume_queue_ext=self.enable_consume_queue_ext,
            mapped_file_size_consume_queue_ext=self.mapped_file_size_consume_queue_ext,
            bit_map_length_consume_queue_ext=self.bloom_filter().m,
        )

    def bloom_filter(self) -> BloomFilter:
        """The filter bit maps' bloom filter; its size ``m`` is the bit maps' length (RocketMQ's
        ConsumerFilterManager sets ``bitMapLengthConsumeQueueExt`` to it the same way)."""
        return BloomFilter(self.max_error_rate_of_bloom_filter, self.expect_consumer_num_use_filter)


def _property_text(value: object) -> str:
    """A setting's value as broker.conf writes it: ``true``/``false``, an enum's name, "" for unset."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, enum.Enum):
        return str(value.value)
    return str(value)
