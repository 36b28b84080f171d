from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.common.settings import SettingError
from rocketq.store import FlushDiskType


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
