"""``rocketq admin`` against a broker with ACL: credentials from options or the environment, and an
anonymous deleteTopic that stops at the broker's refusal, before the NameServer step."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result

from rocketq.admin.cli import admin
from rocketq.testing import ThreadedCluster

ACL = """
accounts:
  - {accessKey: operator, secretKey: operator-secret, admin: true}
  - {accessKey: shop-app, secretKey: shop-secret, topicPerms: [Orders=PUB|SUB]}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    root = tmp_path_factory.mktemp("admin-acl")
    (root / "plain_acl.yml").write_text(ACL)
    with ThreadedCluster(root / "cluster", acl_enable=True, acl_file=root / "plain_acl.yml") as running:
        yield running


def invoke(cluster: ThreadedCluster, *args: str, env: dict[str, str] | None = None) -> Result:
    command = [args[0], "-n", cluster.namesrv_addr, *args[1:]]
    return CliRunner().invoke(admin, command, env=env, catch_exceptions=False)


def test_admin_commands_sign_with_options_or_environment(cluster: ThreadedCluster) -> None:
    operator = ("--access-key", "operator", "--secret-key", "operator-secret")
    created = invoke(cluster, "updateTopic", "-t", "Orders", *operator, "--json")
    assert created.exit_code == 0, created.output
    shop_env = {"ROCKETQ_ACCESS_KEY": "shop-app", "ROCKETQ_SECRET_KEY": "shop-secret"}
    sent = invoke(cluster, "sendMessage", "-t", "Orders", "-p", "signed", "--json", env=shop_env)
    assert sent.exit_code == 0, sent.output
    assert json.loads(sent.output)["status"] == "SEND_OK"
    status = invoke(cluster, "topicStatus", "-t", "Orders", "--json", env=shop_env)
    assert sum(row["maxOffset"] for row in json.loads(status.output)) == 1
    half = invoke(cluster, "topicStatus", "-t", "Orders", "--access-key", "shop-app")
    assert half.exit_code != 0 and "go together" in half.output


def test_anonymous_delete_topic_changes_nothing(cluster: ThreadedCluster) -> None:
    operator = {"ROCKETQ_ACCESS_KEY": "operator", "ROCKETQ_SECRET_KEY": "operator-secret"}
    assert invoke(cluster, "updateTopic", "-t", "Kept", env=operator).exit_code == 0
    for env in (None, {"ROCKETQ_ACCESS_KEY": "shop-app", "ROCKETQ_SECRET_KEY": "shop-secret"}):
        refused = invoke(cluster, "deleteTopic", "-t", "Kept", env=env)
        assert refused.exit_code != 0
        assert "NO_PERMISSION" in refused.output and "DELETE_TOPIC_IN_BROKER" in refused.output
        route = invoke(cluster, "topicRoute", "-t", "Kept", "--json")  # still known to the NameServer
        assert route.exit_code == 0 and json.loads(route.output)["queueDatas"]
    deleted = invoke(cluster, "deleteTopic", "-t", "Kept", env=operator)
    assert deleted.exit_code == 0, deleted.output
    assert invoke(cluster, "topicRoute", "-t", "Kept").exit_code != 0
