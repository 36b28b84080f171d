"""Listen addresses: servers reachable from other machines say so at start when nothing guards them;
RocketMQ broker.conf keys keep working."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.server import NameServer
from rocketq.remoting.address import listens_beyond_loopback
from rocketq.testing import LocalCluster


@pytest.mark.parametrize(
    ("host", "beyond"),
    [
        *[("0.0.0.0", True), ("::", True), ("", True), ("10.1.2.3", True), ("broker.example", True)],
        *[("127.0.0.1", False), ("127.3.2.1", False), ("::1", False), ("localhost", False)],
    ],
)
def test_which_listen_addresses_other_machines_reach(host: str, beyond: bool) -> None:
    assert listens_beyond_loopback(host) is beyond


async def start_broker(tmp_path: Path, caplog: pytest.LogCaptureFixture, **overrides: object) -> str:
    async with LocalCluster(tmp_path, brokers=0) as cluster:
        with caplog.at_level(logging.WARNING, logger="rocketq.broker.server"):
            broker = await cluster.start_broker(0, **overrides)
        await broker.aclose()
    return caplog.text


async def test_a_broker_on_every_interface_without_acl_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    text = await start_broker(tmp_path / "open", caplog, listen_host="0.0.0.0")
    assert "without ACL" in text and "aclEnable=true" in text


async def test_a_broker_on_loopback_or_with_acl_does_not(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert "without ACL" not in await start_broker(tmp_path / "loopback", caplog, listen_host="127.0.0.1")
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text("accounts: []\n")
    text = await start_broker(tmp_path / "acl", caplog, listen_host="0.0.0.0", acl_enable=True, acl_file=acl_file)
    assert "without ACL" not in text


@pytest.mark.parametrize(("host", "warned"), [("0.0.0.0", True), ("127.0.0.1", False)])
async def test_a_name_server_beyond_loopback_warns(host: str, warned: bool, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="rocketq.namesrv.server"):
        async with NameServer(NamesrvConfig(listen_host=host, listen_port=0)):
            pass
    assert ("has no access" in caplog.text) is warned


def test_rocketmq_broker_conf_keys(tmp_path: Path) -> None:
    conf = tmp_path / "conf" / "broker.conf"
    conf.parent.mkdir()
    conf.write_text("brokerIP1=10.0.0.5\nlistenPort=10921\naclEnable=true\n")
    config = BrokerConfig.from_file(conf)
    assert (config.listen_host, config.listen_port, config.advertised_ip) == ("0.0.0.0", 10921, "10.0.0.5")
    assert config.acl_enable and config.acl_file == tmp_path / "conf" / "plain_acl.yml"  # beside broker.conf
    conf.write_text("bindAddress=127.0.0.1\naclFile=acl/rules.yml\n")
    config = BrokerConfig.from_file(conf)
    assert config.listen_host == "127.0.0.1" and config.advertised_ip == "127.0.0.1"  # advertises where it listens
    assert config.acl_file == tmp_path / "conf" / "acl" / "rules.yml"
    assert BrokerConfig.from_mapping({"aclFile": ""}).acl_file is None
