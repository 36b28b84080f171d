"""The official C++ client (PyPI rocketmq==0.4.4) against a broker with aclEnable=true: signed with
``set_session_credentials(access_key, secret_key, "ALIYUN")`` it sends and consumes; with a wrong secret
or without the permission it is refused and nothing is stored."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.client.admin import AdminClient
from rocketq.testing import LocalCluster

from .test_cpp_client import cpp_client_problem, run_driver

pytestmark = pytest.mark.skipif(cpp_client_problem() is not None, reason=str(cpp_client_problem()))

ACL = """
accounts:
  - accessKey: operator
    secretKey: operator-secret
    admin: true
  - accessKey: cpp-account
    secretKey: cpp-secret
    topicPerms: [CppAcl=PUB|SUB, CppReadOnly=SUB]
    groupPerms: [CPP_ACL_CG=SUB]
"""
SIGNED = {"CPP_ACCESS_KEY": "cpp-account", "CPP_SECRET_KEY": "cpp-secret"}


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(ACL)
    async with LocalCluster(tmp_path / "cluster", brokers=1, acl_enable=True, acl_file=acl_file) as running:
        async with AdminClient(running.namesrv_addr, access_key="operator", secret_key="operator-secret") as admin:
            for topic in ("CppAcl", "CppReadOnly"):
                await admin.update_topic(topic, cluster="DefaultCluster", read_queues=4, write_queues=4)
        yield running


async def test_signed_cpp_client_sends_and_consumes(cluster: LocalCluster, tmp_path: Path) -> None:
    sent = await run_driver(tmp_path, cluster.namesrv_addr, "produce", "CppAcl", env=SIGNED)
    kinds = [e["kind"] for e in sent if e["event"] == "sent"]
    assert kinds == ["sync", "oneway", "orderly", "orderly", "orderly", "big"]
    assert all(e.get("status", 1) == 1 for e in sent if e["event"] == "sent")
    received = await run_driver(
        tmp_path, cluster.namesrv_addr, "consume", "CppAcl", "CPP_ACL_CG", "6", "40", env=SIGNED
    )
    bodies = {e["body"] for e in received if e["event"] == "received"}
    assert bodies == {"cpp-sync", "cpp-oneway", "cpp-orderly-0", "cpp-orderly-1", "cpp-orderly-2", "x" * 5000}
    broker = cluster.brokers[0]
    assert sum(broker.offsets.offsets_of("CPP_ACL_CG", "CppAcl").values()) == 6  # signed offset commits
    assert broker.acl is not None and broker.acl.refused == 0


@pytest.mark.parametrize(
    ("topic", "env", "reason"),
    [
        ("CppAcl", {**SIGNED, "CPP_SECRET_KEY": "not-the-secret"}, "does not match AccessKey 'cpp-account'"),
        ("CppReadOnly", SIGNED, "no PUB permission on topic:CppReadOnly"),
        ("CppAcl", {}, "needs an AccessKey"),  # no credentials: the client still signs, with an empty key
    ],
    ids=["wrong-secret", "no-permission", "anonymous"],
)
async def test_refused_cpp_sends_store_nothing(
    cluster: LocalCluster,
    tmp_path: Path,
    topic: str,
    env: dict[str, str],
    reason: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    broker = cluster.brokers[0]
    written = broker.store.commit_log.max_offset
    with caplog.at_level("INFO", logger="rocketq.broker.acl"):
        events = await run_driver(tmp_path, cluster.namesrv_addr, "try_send", topic, "refused", env=env)
    assert [e["event"] for e in events] == ["failed", "done"]
    assert broker.store.commit_log.max_offset == written
    assert broker.acl is not None and broker.acl.refused > 0
    assert reason in caplog.text
