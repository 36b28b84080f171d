"""``rocketq admin`` against a real in-process cluster (two brokers), in table and JSON form."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rocketq.admin.cli import admin
from rocketq.client import Message, MessageQueue, SyncTransactionProducer, TransactionState
from rocketq.testing import ThreadedCluster, wait_until


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    with ThreadedCluster(tmp_path_factory.mktemp("admin"), brokers=2) as running:
        yield running


def invoke(cluster: ThreadedCluster, *args: str) -> str:
    result = CliRunner().invoke(admin, [args[0], "-n", cluster.namesrv_addr, *args[1:]], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_cluster_list(cluster: ThreadedCluster) -> None:
    rows = json.loads(invoke(cluster, "clusterList", "--json"))
    assert {(r["cluster"], r["broker"], r["brokerId"]) for r in rows} == {
        ("DefaultCluster", "broker-a", 0),
        ("DefaultCluster", "broker-b", 0),
    }
    table = invoke(cluster, "clusterList")
    assert "broker-a" in table and "address" in table.splitlines()[0]


def test_topic_lifecycle(cluster: ThreadedCluster) -> None:
    created = json.loads(invoke(cluster, "updateTopic", "-t", "AdminTopic", "-r", "3", "-w", "3", "--json"))
    assert len(created["brokers"]) == 2
    assert "AdminTopic" in json.loads(invoke(cluster, "topicList", "--json"))
    route = json.loads(invoke(cluster, "topicRoute", "-t", "AdminTopic", "--json"))
    assert sorted((q[0], q[1], q[2]) for q in route["queueDatas"]) == [("broker-a", 3, 3), ("broker-b", 3, 3)]
    status = json.loads(invoke(cluster, "topicStatus", "-t", "AdminTopic", "--json"))
    assert len(status) == 6 and {s["maxOffset"] for s in status} == {0}
    sent = json.loads(
        invoke(cluster, "sendMessage", "-t", "AdminTopic", "-p", "hello admin", "-k", "order-7", "-c", "TagA", "--json")
    )
    assert sent["status"] == "SEND_OK"
    status = json.loads(invoke(cluster, "topicStatus", "-t", "AdminTopic", "--json"))
    assert sum(s["maxOffset"] for s in status) == 1 and any(s["lastUpdated"] for s in status)
    by_offset_id = json.loads(invoke(cluster, "queryMsgById", "-i", sent["offsetMsgId"], "--json"))
    assert by_offset_id[0]["body"] == "hello admin" and by_offset_id[0]["tags"] == "TagA"
    by_unique_id = json.loads(invoke(cluster, "queryMsgById", "-t", "AdminTopic", "-i", sent["msgId"], "--json"))
    assert [m["offsetMsgId"] for m in by_unique_id] == [sent["offsetMsgId"]]
    by_key = json.loads(invoke(cluster, "queryMsgByKey", "-t", "AdminTopic", "-k", "order-7", "--json"))
    assert [m["body"] for m in by_key] == ["hello admin"]
    assert "hello admin" in invoke(cluster, "queryMsgByKey", "-t", "AdminTopic", "-k", "order-7")
    invoke(cluster, "deleteTopic", "-t", "AdminTopic")
    assert "AdminTopic" not in json.loads(invoke(cluster, "topicList", "--json"))


def test_errors_are_clear(cluster: ThreadedCluster, tmp_path: Path) -> None:
    result = CliRunner().invoke(admin, ["topicRoute", "-n", cluster.namesrv_addr, "-t", "NoSuchTopic"])
    assert result.exit_code == 1 and "NoSuchTopic" in result.output
    unreachable = CliRunner().invoke(admin, ["topicList", "-n", "127.0.0.1:1"])
    assert unreachable.exit_code == 1 and "NameServer" in unreachable.output


def test_consumer_group_commands(cluster: ThreadedCluster) -> None:
    from rocketq.client import ClientConfig, ConsumeFromWhere, ConsumerConfig, SyncPushConsumer

    invoke(cluster, "updateTopic", "-t", "ProgTopic", "-r", "2", "-w", "2")
    for i in range(10):
        invoke(cluster, "sendMessage", "-t", "ProgTopic", "-p", f"p{i}")
    received: list[bytes] = []
    config = ConsumerConfig(
        group="AG",
        client=ClientConfig(namesrv_addr=cluster.namesrv_addr),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        persist_consumer_offset_interval_s=0.1,
    )
    with SyncPushConsumer(config, lambda messages: received.extend(m.body for m in messages)) as consumer:
        consumer.subscribe("ProgTopic")
        consumer.start()
        wait_until(lambda: len(received) >= 10)
        wait_until(lambda: sum(r["consumerOffset"] for r in progress(cluster)) == 10)
        rows = progress(cluster)
        assert {(r["topic"], r["lag"]) for r in rows if r["topic"] == "ProgTopic"} == {("ProgTopic", 0)}
        assert "total lag: 0, consume TPS: " in invoke(cluster, "consumerProgress", "-g", "AG", "-t", "ProgTopic")
        overview = {row["group"]: row for row in json.loads(invoke(cluster, "consumerProgress", "--json"))}
        assert overview["AG"].pop("consumeTps") > 0  # ten messages in the broker's first minute
        assert overview["AG"] == {
            "group": "AG",
            "members": 1,
            "version": 409,
            "consumeType": "CONSUME_PASSIVELY",
            "messageModel": "CLUSTERING",
            "lag": 0,
        }
        connection = json.loads(invoke(cluster, "consumerConnection", "-g", "AG", "--json"))
        assert len(connection["members"]) == 1 and connection["subscriptions"]["ProgTopic"] == "*"
        assert connection["messageModel"] == "CLUSTERING"
        reset = json.loads(invoke(cluster, "resetOffsetByTime", "-g", "AG", "-t", "ProgTopic", "-s", "0", "--json"))
        assert {r["offset"] for r in reset} == {0}
        wait_until(lambda: len(received) >= 20)  # the running member went back and consumed everything again
        assert sorted(received[10:]) == sorted(received[:10])

    invoke(cluster, "sendMessage", "-t", "ProgTopic", "-p", "while nobody consumes")
    offline = invoke(cluster, "consumerProgress").splitlines()
    assert offline[0].split() == ["group", "members", "version", "type", "model", "tps", "lag"]
    ag = next(line.split() for line in offline if line.startswith("AG "))
    assert ag[:4] == ["AG", "0", "-", "-"] and ag[4] == "-" and float(ag[5]) > 0 and ag[6] == "1"  # gone, 1 behind
    alone = CliRunner().invoke(admin, ["consumerProgress", "-n", cluster.namesrv_addr, "-t", "ProgTopic"])
    assert alone.exit_code == 2 and "--topic needs --group" in alone.output

    # with the member gone: --no-force moves offsets back only, the default (forced) either way
    def reset(when: str, *flags: str) -> list[int]:
        rows = json.loads(
            invoke(cluster, "resetOffsetByTime", "-g", "AG", "-t", "ProgTopic", "-s", when, *flags, "--json")
        )
        return [row["offset"] for row in rows]

    assert set(reset("0", "--no-force")) == {0}
    assert set(reset("now", "--no-force")) == {0}  # forward: not without force
    assert sum(reset("now")) == 11  # forced: to the end of every queue, past all eleven messages
    created = json.loads(invoke(cluster, "updateSubGroup", "-g", "NewGroup", "-r", "3", "--json"))
    assert created["group"] == "NewGroup" and len(created["brokers"]) == 2
    one = json.loads(invoke(cluster, "updateSubGroup", "-g", "OneBroker", "-b", created["brokers"][0], "--json"))
    assert one["brokers"] == created["brokers"][:1]
    missing = CliRunner().invoke(admin, ["consumerConnection", "-n", cluster.namesrv_addr, "-g", "Nobody"])
    assert missing.exit_code == 1 and "Nobody" in missing.output
    no_progress = CliRunner().invoke(admin, ["consumerProgress", "-n", cluster.namesrv_addr, "-g", "Nobody"])
    assert no_progress.exit_code == 1 and "no consume progress for group 'Nobody'" in no_progress.output
    bad = CliRunner().invoke(admin, ["updateSubGroup", "-n", cluster.namesrv_addr, "-g", "bad group"])
    assert bad.exit_code == 1 and "characters outside" in bad.output


def progress(cluster: ThreadedCluster) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(invoke(cluster, "consumerProgress", "-g", "AG", "--json"))
    return rows


def test_pending_transactions(cluster: ThreadedCluster) -> None:
    assert json.loads(invoke(cluster, "pendingTransactions", "--json")) == []
    with SyncTransactionProducer(
        local_transaction=lambda m, a: TransactionState.UNKNOWN,
        check=lambda m: TransactionState.UNKNOWN,
        group="AdminTx",
        namesrv_addr=cluster.namesrv_addr,
    ) as producer:
        for body in (b"one", b"two"):
            producer.send_message_in_transaction(Message("AdminTxTopic", body))
        group = producer.transaction_group("batch-9")
        group.send_batch([Message("AdminTxTopic", b"x")] * 3, MessageQueue("AdminTxTopic", "broker-a", 0), "0-0")
        rows = json.loads(invoke(cluster, "pendingTransactions", "--json"))
        assert sum(r["halfMessages"] for r in rows) == 5 and {r["producerGroup"] for r in rows} == {"AdminTx"}
        assert sum(r["transactionGroups"] for r in rows) == 1 and all(r["oldest"] for r in rows)
        assert "AdminTx" in invoke(cluster, "pendingTransactions")
        group.rollback("broker-a")
        rows = json.loads(invoke(cluster, "pendingTransactions", "--json"))
        assert sum(r["halfMessages"] for r in rows) == 2 and sum(r["transactionGroups"] for r in rows) == 0


def test_deleting_a_topic_that_does_not_exist_says_so(cluster: ThreadedCluster) -> None:
    result = CliRunner().invoke(admin, ["deleteTopic", "-n", cluster.namesrv_addr, "-t", "NeverCreated"])
    assert result.exit_code == 1
    assert result.output == (
        "Error: topic NeverCreated does not exist (rocketq admin topicList shows them); nothing deleted\n"
    )


def test_sending_to_an_unknown_topic_without_auto_creation_names_the_fix(tmp_path: Path) -> None:
    with ThreadedCluster(tmp_path, auto_create_topic_enable=False) as strict:
        result = CliRunner().invoke(admin, ["sendMessage", "-n", strict.namesrv_addr, "-t", "Unknown", "-p", "x"])
    assert result.exit_code == 1 and len(result.output.splitlines()) == 1
    assert "rocketq admin updateTopic -t Unknown" in result.output and "autoCreateTopicEnable=true" in result.output
