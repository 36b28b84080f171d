"""consumerStatus and consumeMessage against a live cluster: the members themselves answer, through
the broker, GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309), with Java's field names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from rocketq.admin.cli import admin
from rocketq.client import (
    ClientConfig,
    ConsumeFromWhere,
    ConsumerConfig,
    Message,
    MessageExt,
    ProducerConfig,
    SyncProducer,
    SyncPullConsumer,
    SyncPushConsumer,
)
from rocketq.client.admin import AdminClient
from rocketq.protocol import RequestCode
from rocketq.protocol.fastjson import quote_object_keys
from rocketq.protocol.running_info import GetConsumerRunningInfoRequestHeader
from rocketq.testing import ThreadedCluster, wait_until

PROCESS_QUEUE_INFO = {
    "commitOffset",
    "cachedMsgMinOffset",
    "cachedMsgMaxOffset",
    "cachedMsgCount",
    "cachedMsgSizeInMiB",
    "transactionMsgMinOffset",
    "transactionMsgMaxOffset",
    "transactionMsgCount",
    "locked",
    "tryUnlockTimes",
    "lastLockTimestamp",
    "droped",
    "lastPullTimestamp",
    "lastConsumeTimestamp",
}
CONSUME_STATUS = {"pullRT", "pullTPS", "consumeRT", "consumeOKTPS", "consumeFailedTPS", "consumeFailedMsgs"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    with ThreadedCluster(tmp_path_factory.mktemp("admin-consumers"), brokers=1) as running:
        yield running


def invoke(cluster: ThreadedCluster, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(admin, [args[0], "-n", cluster.namesrv_addr, *args[1:]], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def config(cluster: ThreadedCluster, group: str) -> ConsumerConfig:
    return ConsumerConfig(
        group=group,
        client=ClientConfig(namesrv_addr=cluster.namesrv_addr),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    )


def raw_running_info(cluster: ThreadedCluster, group: str, client_id: str) -> dict[str, Any]:
    """The wire body of GET_CONSUMER_RUNNING_INFO as Java's tools receive it."""

    async def ask() -> bytes:
        async with AdminClient(cluster.namesrv_addr) as client:
            address = next(iter((await client.master_addresses()).values()))
            fields = GetConsumerRunningInfoRequestHeader(consumer_group=group, client_id=client_id).to_ext_fields()
            return bytes((await client.request_broker(address, RequestCode.GET_CONSUMER_RUNNING_INFO, fields)).body)

    body = cluster.call(ask())
    assert body.startswith(b'{"mqTable":{{"brokerName":')  # fastjson's object keys, as a Java consumer writes them
    document: dict[str, Any] = json.loads(quote_object_keys(body))
    return document


def test_push_consumer_answers_consumer_status_and_consume_message(cluster: ThreadedCluster) -> None:
    invoke(cluster, "updateTopic", "-t", "StatusT", "-r", "2", "-w", "2")
    send = ["sendMessage", "-t", "StatusT", "-c", "TagA", "-b", "broker-a", "--json"]
    # three to each queue: left to the producers' round robin, all six could land on one
    sent = [json.loads(invoke(cluster, *send, "-p", f"s{i}", "-i", str(i % 2))) for i in range(6)]
    received: list[MessageExt] = []
    with SyncPushConsumer(config(cluster, "StatusG"), lambda messages: received.extend(messages)) as consumer:
        consumer.subscribe("StatusT", "TagA || TagB")
        consumer.start()
        wait_until(lambda: len(received) >= 6)
        client_id = consumer.client_id
        mine = [q for q in consumer.assigned_queues if q.topic == "StatusT"]
        wait_until(lambda: sum(consumer.consume_offset(q) or 0 for q in mine) == 6)

        raw = raw_running_info(cluster, "StatusG", client_id)
        assert set(raw) == {"mqTable", "properties", "subscriptionSet", "statusTable", "jstack"}
        queues = {json.loads(key)["queueId"]: info for key, info in raw["mqTable"].items() if "StatusT" in key}
        assert set(queues) == {0, 1} and all(set(info) == PROCESS_QUEUE_INFO for info in queues.values())
        assert sum(info["commitOffset"] for info in queues.values()) == 6
        assert all(info["lastConsumeTimestamp"] > 0 and info["lastPullTimestamp"] > 0 for info in queues.values())
        assert set(raw["statusTable"]["StatusT"]) == CONSUME_STATUS
        assert raw["statusTable"]["StatusT"]["consumeOKTPS"] > 0 and raw["statusTable"]["StatusT"]["pullRT"] > 0
        subscription = next(s for s in raw["subscriptionSet"] if s["topic"] == "StatusT")
        assert subscription["subString"] == "TagA || TagB" and subscription["tagsSet"] == ["TagA", "TagB"]
        assert raw["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
        assert raw["properties"]["PROP_CONSUMEORDERLY"] == "false" and raw["jstack"] is None

        by_member = json.loads(invoke(cluster, "consumerStatus", "-g", "StatusG", "--json"))
        assert list(by_member) == [client_id]
        one = json.loads(invoke(cluster, "consumerStatus", "-g", "StatusG", "-i", client_id, "-s", "--json"))
        assert "MainThread" in one["jstack"] and one["statusTable"]["StatusT"]["consumeFailedMsgs"] == 0
        assert {e["messageQueue"]["queueId"] for e in one["mqTable"] if e["messageQueue"]["topic"] == "StatusT"} == {
            0,
            1,
        }
        table = invoke(cluster, "consumerStatus", "-g", "StatusG")
        assert client_id in table and "same subscriptions on every member: yes" in table
        assert "consumeOKTPS" in invoke(cluster, "consumerStatus", "-g", "StatusG", "-i", client_id)

        before = len(received)
        result = json.loads(
            invoke(cluster, "consumeMessage", "-g", "StatusG", "-d", client_id, "-i", sent[2]["offsetMsgId"], "--json")
        )
        assert result["consumeResult"] == "CR_SUCCESS" and result["order"] is False and result["autoCommit"] is True
        assert set(result) == {"order", "autoCommit", "consumeResult", "remark", "spentTimeMills"}
        assert len(received) == before + 1 and received[-1].body == b"s2"

        gone = invoke(cluster, "consumerStatus", "-g", "StatusG", "-i", "no-such-client", code=1)
        assert "not online" in gone


def test_pull_consumer_answers_consumer_status(cluster: ThreadedCluster) -> None:
    invoke(cluster, "updateTopic", "-t", "PullStatusT", "-r", "1", "-w", "1")
    for i in range(4):
        invoke(cluster, "sendMessage", "-t", "PullStatusT", "-p", f"p{i}")
    with SyncPullConsumer(config(cluster, "PullStatusG")) as consumer:
        consumer.subscribe("PullStatusT")
        consumer.start()
        polled: list[MessageExt] = []
        wait_until(lambda: len(polled.__iadd__(consumer.poll(0.2))) >= 4)
        raw = raw_running_info(cluster, "PullStatusG", consumer.client_id)
        assert raw["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_ACTIVELY"
        queue = next(info for key, info in raw["mqTable"].items() if "PullStatusT" in key)
        assert set(queue) == PROCESS_QUEUE_INFO and queue["commitOffset"] == 4
        assert raw["statusTable"]["PullStatusT"]["pullTPS"] > 0
        refused = invoke(
            cluster, "consumeMessage", "-g", "PullStatusG", "-d", consumer.client_id, "-i", "0" * 32, code=1
        )
        assert "offset message id" in refused


def test_producer_connection(cluster: ThreadedCluster) -> None:
    invoke(cluster, "updateTopic", "-t", "ProducerT", "-r", "1", "-w", "1")
    with SyncProducer(
        ProducerConfig(group="ShownProducers", client=ClientConfig(namesrv_addr=cluster.namesrv_addr))
    ) as producer:
        producer.send(Message("ProducerT", b"hello"))
        rows = json.loads(invoke(cluster, "producerConnection", "-g", "ShownProducers", "-t", "ProducerT", "--json"))
        assert len(rows) == 1 and "@" in rows[0]["clientId"]
        assert rows[0]["language"] == "JAVA" and rows[0]["version"] == 409 and rows[0]["clientAddr"]
        assert rows[0]["clientId"] in invoke(cluster, "producerConnection", "-g", "ShownProducers", "-t", "ProducerT")
    none = invoke(cluster, "producerConnection", "-g", "NoProducers", "-t", "ProducerT", code=1)
    assert "no producer connected" in none


def test_print_msg(cluster: ThreadedCluster) -> None:
    invoke(cluster, "updateTopic", "-t", "PrintT", "-r", "2", "-w", "2")
    with SyncProducer(
        ProducerConfig(group="PrintP", client=ClientConfig(namesrv_addr=cluster.namesrv_addr))
    ) as producer:
        producer.send(Message("PrintT", b"first line\nsecond line", tags="TagA"))
        producer.send(Message("PrintT", b"\x00\xffbinary", tags="TagA"))
        producer.send(Message("PrintT", "caf\u00e9".encode("latin-1"), tags="TagB"))
    queues = json.loads(invoke(cluster, "printMsg", "-t", "PrintT", "--json"))
    assert sorted(q["queueId"] for q in queues) == [0, 1]
    bodies = sorted(m["body"] for q in queues for m in q["messages"])
    assert bodies == sorted(["first line\nsecond line", b"\x00\xffbinary".hex(), "caf\u00e9".encode("latin-1").hex()])
    only_a = json.loads(invoke(cluster, "printMsg", "-t", "PrintT", "-s", "TagA", "--json"))
    assert sum(len(q["messages"]) for q in only_a) == 2
    text = invoke(cluster, "printMsg", "-t", "PrintT", "-c", "latin-1")
    assert "caf\u00e9" in text and "second line" in text and "\x00" not in text
    later = json.loads(invoke(cluster, "printMsg", "-t", "PrintT", "-b", "now", "--json"))
    assert all(not q["messages"] for q in later)
    assert "unknown charset" in invoke(cluster, "printMsg", "-t", "PrintT", "-c", "klingon", code=2)
