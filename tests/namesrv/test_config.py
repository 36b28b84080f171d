from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.common.settings import parse_properties, snake_case
from rocketq.namesrv import KVConfigTable, NamesrvConfig, NamesrvConfigError


def test_defaults_mirror_rocketmq() -> None:
    config = NamesrvConfig()
    assert (config.listen_host, config.listen_port) == ("0.0.0.0", 9876)
    assert (config.scan_interval_s, config.broker_expiry_s) == (10.0, 120.0)


def test_from_mapping_accepts_java_and_python_keys() -> None:
    config = NamesrvConfig.from_mapping(
        {
            "listenPort": "19876",
            "bindAddress": "127.0.0.1",
            "orderMessageEnable": "true",
            "broker_expiry_s": 30,
            "scanIntervalS": "2.5",
            "rocketmqHome": "/opt/rocketmq",  # a Java setting we have no use for
        }
    )
    assert config.listen_port == 19876 and config.listen_host == "127.0.0.1"
    assert config.order_message_enable is True
    assert (config.broker_expiry_s, config.scan_interval_s) == (30.0, 2.5)
    assert NamesrvConfig.from_mapping({"serverChannelMaxIdleTimeSeconds": "7"}).idle_timeout_s == 7.0
    assert snake_case("serverChannelMaxIdleTimeSeconds") == "server_channel_max_idle_time_seconds"


@pytest.mark.parametrize(("key", "value"), [("listenPort", "ninety"), ("orderMessageEnable", "maybe")])
def test_bad_values_name_the_key(key: str, value: str) -> None:
    with pytest.raises(NamesrvConfigError, match=key):
        NamesrvConfig.from_mapping({key: value})


def test_from_file(tmp_path: Path) -> None:
    path = tmp_path / "namesrv.properties"
    path.write_text("# comment\n! another\nlistenPort = 9999\nkvConfigPath=/tmp/kv.json\norderMessageEnable: true\n\n")
    config = NamesrvConfig.from_file(path)
    assert config.listen_port == 9999 and config.order_message_enable
    assert parse_properties("a=b=c\n  x  :  y z  ") == {"a": "b=c", "x": "y z  "}  # (Java keeps the trailing spaces)


def test_kv_config_table() -> None:
    kv = KVConfigTable()
    assert kv.get("ns", "k") is None and kv.namespace("ns") is None
    kv.put("ns", "k", "v1")
    kv.put("ns", "k", "v2")
    assert kv.get("ns", "k") == "v2" and kv.namespace("ns") == {"k": "v2"}
    assert kv.delete("ns", "k") and not kv.delete("ns", "k")
    assert kv.namespace("ns") is None


def test_client_limits_come_from_java_keys() -> None:
    config = NamesrvConfig.from_mapping(
        {
            "writeBufferHighWaterMark": "8388608",
            "serverFrameTimeoutSeconds": "5",
            "serverChannelMaxIdleTimeSeconds": "9",
        }
    )
    limits = config.server_limits()
    assert (limits.write_buffer_high_water, limits.frame_timeout_s, limits.idle_timeout_s) == (8 << 20, 5, 9)
