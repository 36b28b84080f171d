from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.common.settings import SettingError
from rocketq.store import FlushDiskType, MessageStore, StoreConfig


def test_broker_conf_keys_map_onto_fields(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "# a RocketMQ broker.conf\n"
        "brokerClusterName = ClusterX\n"
        "brokerName=broker-x\n"
        "brokerId=0\n"
        "namesrvAddr=127.0.0.1:9876;127.0.0.1:9877\n"
        "listenPort: 10999\n"
        "storePathRootDir=~/rq-store\n"
        "flushDiskType=SYNC_FLUSH\n"
        "mapedFileSizeCommitLog=1048576\n"
        "autoCreateTopicEnable=false\n"
        "brokerIP1=10.1.2.3\n"
        "deleteWhen=04\n"
        "rocketmqHome=/ignored\n"
    )
    config = BrokerConfig.from_file(conf, listen_port=11000)
    assert config.broker_cluster_name == "ClusterX" and config.broker_name == "broker-x"
    assert config.name_servers == ["127.0.0.1:9876", "127.0.0.1:9877"]
    assert config.listen_port == 11000  # the command line wins
    assert config.store_path_root_dir == Path("~/rq-store").expanduser()
    assert config.flush_disk_type is FlushDiskType.SYNC_FLUSH
    assert config.mapped_file_size_commit_log == 1048576
    assert config.auto_create_topic_enable is False
    assert config.advertised_ip == "10.1.2.3"
    assert config.store_config().flush_disk_type is FlushDiskType.SYNC_FLUSH


def test_bad_values_are_named() -> None:
    with pytest.raises(SettingError, match="listenPort"):
        BrokerConfig.from_mapping({"listenPort": "ten"})
    with pytest.raises(SettingError, match="flushDiskType"):
        BrokerConfig.from_mapping({"flushDiskType": "SOMETIMES"})


def test_delay_levels_accept_milliseconds() -> None:
    config = BrokerConfig(message_delay_level="100ms 2s 1m 1h 1d")
    assert config.store_config().delay_levels_ms() == (100, 2000, 60_000, 3_600_000, 86_400_000)


def test_client_limits_come_from_broker_conf_keys() -> None:
    config = BrokerConfig.from_mapping(
        {
            "writeBufferHighWaterMark": "8388608",
            "writeBufferLowWaterMark": "2097152",
            "serverFrameTimeoutSeconds": "10",
            "serverChannelMaxIdleTimeSeconds": "60",
            "serverMaxBufferedRequestBytes": "67108864",
        }
    )
    limits = config.server_limits()
    assert (limits.write_buffer_high_water, limits.write_buffer_low_water) == (8 << 20, 2 << 20)
    assert (limits.frame_timeout_s, limits.idle_timeout_s, limits.max_buffered_request_bytes) == (10, 60, 64 << 20)


def test_transaction_settings_from_broker_conf(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "transactionTimeOut=3000\ntransactionCheckInterval=30000\ntransactionCheckMax=5\n"
        "rejectTransactionMessage=true\ntransactionGroupTimeout=60000\n"
        "transactionGroupCommittedMax=500\ntransactionGroupCommittedRetentionHours=1.5\n"
    )
    config = BrokerConfig.from_file(conf)
    assert (config.transaction_time_out, config.transaction_check_interval, config.transaction_check_max) == (
        3000,
        30_000,
        5,
    )
    assert config.reject_transaction_message and config.transaction_group_timeout == 60_000
    assert (config.transaction_group_committed_max, config.transaction_group_committed_retention_hours) == (500, 1.5)
    defaults = BrokerConfig()  # RocketMQ's: checked after 6 s, every 60 s, at most 15 times
    assert (defaults.transaction_time_out, defaults.transaction_check_interval, defaults.transaction_check_max) == (
        6000,
        60_000,
        15,
    )


def test_disk_space_keys_reach_the_store_as_shares_of_the_disk() -> None:
    """RocketMQ's percentages (diskMaxUsedSpaceRatio bounded to 10..95 as there) and rocketq's own
    cleanUnconsumedUnderPressure, from broker.conf spellings."""
    config = BrokerConfig.from_mapping(
        {
            "fileReservedTime": "48",
            "deleteWhen": "02;04",
            "diskMaxUsedSpaceRatio": "99",
            "diskSpaceCleanForciblyRatio": "80",
            "diskSpaceWarningLevelRatio": "93",
            "cleanFileForciblyEnable": "false",
            "cleanResourceInterval": "5000",
            "cleanUnconsumedUnderPressure": "true",
        }
    ).store_config()
    assert (config.file_reserved_time_hours, config.delete_when) == (48.0, "02;04")
    assert config.disk_max_used_space_ratio == 0.95
    assert (config.disk_space_clean_forcibly_ratio, config.disk_space_warning_level_ratio) == (0.80, 0.93)
    assert config.clean_file_forcibly_enable is False and config.clean_unconsumed_under_pressure is True
    assert config.clean_resource_interval_ms == 5000
    defaults = BrokerConfig().store_config()
    assert (defaults.disk_max_used_space_ratio, defaults.disk_space_clean_forcibly_ratio) == (0.75, 0.85)
    assert defaults.disk_space_warning_level_ratio == 0.90 and defaults.clean_unconsumed_under_pressure is False


def test_properties_files_are_read_with_their_full_syntax(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "! a comment\n"
        "brokerName broker-\\\n"
        "    continued\n"  # a continuation line, leading blanks dropped
        "namesrvAddr = 127.0.0.1:9876;\\\n  127.0.0.1:9877\n"
        "brokerClusterName:Cluster\\u0041\n"  # an escape
        "deleteWhen\t03\n"  # whitespace as the separator
    )
    config = BrokerConfig.from_file(conf)
    assert config.broker_name == "broker-continued"
    assert config.name_servers == ["127.0.0.1:9876", "127.0.0.1:9877"]
    assert config.broker_cluster_name == "ClusterA"
    assert config.delete_when == "03"


def test_every_store_setting_is_reachable_from_broker_conf() -> None:
    """No hand-kept subset: each StoreConfig field is set by some broker.conf key."""
    defaults = BrokerConfig().store_config()
    unreachable = []
    for field in dataclasses.fields(StoreConfig):
        if field.name in ("store_path_root_dir", "bit_map_length_consume_queue_ext"):
            continue  # (a path; derived from the bloom filter, as in RocketMQ: checked below)
        changed = _a_different_value(getattr(defaults, field.name))
        candidates = [key for key in BrokerConfig.known_keys() if _names_field(key, field.name)]
        if not any(
            getattr(BrokerConfig.from_mapping({key: changed[1]}).store_config(), field.name)
            == (changed[0] if field.name != "max_message_size" else changed[0] + 64 * 1024)  # type: ignore[operator]
            for key in candidates
        ):
            unreachable.append(field.name)
    assert unreachable == []
    bloom = BrokerConfig.from_mapping({"expectConsumerNumUseFilter": "64"})
    assert (
        bloom.store_config().bit_map_length_consume_queue_ext
        == bloom.bloom_filter().m
        != defaults.bit_map_length_consume_queue_ext
    )


def _names_field(key: str, field: str) -> bool:
    bare = field.removesuffix("_ms").removesuffix("_hours").replace("_", "").lower()
    return key.lower().replace("maped", "mapped") in (bare, field.replace("_", "").lower()) or (
        key == "checkCRCOnRecover" and field == "check_crc_on_recover"
    )


def _a_different_value(value: object) -> tuple[object, str]:
    """(the value the store should get, the broker.conf text for it)."""
    if isinstance(value, bool):
        return (not value, str(not value).lower())
    if isinstance(value, FlushDiskType):
        return (FlushDiskType.SYNC_FLUSH, "SYNC_FLUSH")
    if isinstance(value, float) and value < 1:  # a share of the disk: percent in broker.conf
        return (0.5, "50")
    if isinstance(value, (int, float)):
        return (value + 1 if not isinstance(value, float) else value + 1.0, str(value + 1))
    if value == "04":
        return ("05", "05")
    return ("1s 2s", "1s 2s")


def test_named_rocketmq_keys_reach_the_store() -> None:
    store = BrokerConfig.from_mapping(
        {
            "flushIntervalCommitLog": "200",
            "flushCommitLogLeastPages": "0",
            "flushIntervalConsumeQueue": "300",
            "syncFlushTimeout": "9000",
            "messageIndexEnable": "false",
            "checkCRCOnRecover": "false",
            "mapedFileSizeCommitLog": "1048576",
        }
    ).store_config()
    broker = BrokerConfig.from_mapping(
        {"flushConsumerOffsetInterval": "1000", "registerNameServerPeriod": "10000", "shortPollingTimeMills": "50"}
    )
    assert (broker.flush_consumer_offset_interval_ms, broker.register_name_server_period_ms) == (1000, 10_000)
    assert broker.short_polling_time_mills == 50
    assert (store.flush_interval_commit_log_ms, store.flush_commit_log_least_pages) == (200, 0)
    assert (store.flush_interval_consume_queue_ms, store.sync_flush_timeout_ms) == (300, 9000)
    assert store.message_index_enable is False and store.check_crc_on_recover is False
    assert store.mapped_file_size_commit_log == 1048576


def test_message_index_enable_false_turns_the_key_index_off(tmp_path: Path) -> None:
    config = BrokerConfig.from_mapping({"storePathRootDir": str(tmp_path), "messageIndexEnable": "false"})
    with MessageStore(config.store_config()) as store:
        assert store.index is None
    assert not (tmp_path / "index").exists() or not any((tmp_path / "index").iterdir())


def test_unknown_keys_are_named_in_a_warning_with_the_closest_key(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        config = BrokerConfig.from_mapping(
            {"flushIntervalComitLog": "100", "sendMessageThreadPoolNums": "4", "brokerName": "b"}
        )
    assert config.broker_name == "b"
    [record] = [r for r in caplog.records if r.levelno == logging.WARNING]
    message = record.getMessage()
    assert "flushIntervalComitLog (did you mean flushIntervalCommitLog?)" in message
    assert "sendMessageThreadPoolNums" in message and "sendMessageThreadPoolNums (" not in message


def test_known_keys_raise_no_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        BrokerConfig.from_mapping(
            {
                key: _plausible(key)
                for key in (
                    "brokerIP1",
                    "mapedFileSizeConsumeQueue",
                    "fileReservedTime",
                    "longPollingEnable",
                    "shortPollingTimeMills",
                    "flushDiskType",
                    "brokerRole",
                    "brokerId",
                )
            }
        )
    assert caplog.records == []


def _plausible(key: str) -> str:
    return {
        "brokerIP1": "10.0.0.1",
        "flushDiskType": "ASYNC_FLUSH",
        "brokerRole": "ASYNC_MASTER",
        "longPollingEnable": "false",
    }.get(key, "0" if key == "brokerId" else "100")


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("brokerRole", "SLAVE", "SLAVE needs a brokerId above 0"),
        ("brokerId", "1", "ASYNC_MASTER has brokerId 0"),
        ("haListenPort", "70000", "port"),
        ("listenPort", "70000", "port"),
        ("deleteWhen", "4am", "hours of the day"),
    ],
)
def test_values_rocketq_cannot_honour_are_refused(key: str, value: str, reason: str) -> None:
    with pytest.raises(SettingError, match=reason) as raised:
        BrokerConfig.from_mapping({key: value})
    assert str(raised.value).startswith(f"setting {key}=") and "\n" not in str(raised.value)


def test_replication_roles_and_ids() -> None:
    slave = BrokerConfig.from_mapping({"brokerRole": "SLAVE", "brokerId": "2", "haMasterAddress": "10.0.0.1:10912"})
    assert slave.is_slave and slave.broker_id == 2 and slave.ha_master_address == "10.0.0.1:10912"
    sync = BrokerConfig.from_mapping({"brokerRole": "SYNC_MASTER", "listenPort": "10911"})
    assert not sync.is_slave and sync.ha_port(10911) == 10912  # listenPort + 1, as advertised
    assert BrokerConfig.from_mapping({"listenPort": "0"}).ha_port(40000) == 0  # a free one
    assert BrokerConfig.from_mapping({"haListenPort": "30000"}).ha_port(10911) == 30000
    with pytest.raises(SettingError, match="SYNC_MASTER has brokerId 0"):
        BrokerConfig.from_mapping({"brokerRole": "SYNC_MASTER", "brokerId": "1"})
