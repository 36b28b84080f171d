"""The admin message queries (queryMsgById, queryMsgByKey, queryMsgByUniqueKey, queryMsgByOffset)
against two real brokers: the text form (headers, properties, body as text or hex), JSON, errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

from rocketq.admin.cli import admin
from rocketq.client import Message, SyncProducer
from rocketq.client.message import SendResult
from rocketq.testing import ThreadedCluster

TOPIC = "AdminMessages"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    with ThreadedCluster(tmp_path_factory.mktemp("admin-messages"), brokers=2) as running:
        yield running


@pytest.fixture(scope="module")
def sent(cluster: ThreadedCluster) -> dict[str, SendResult]:
    """A text message and a binary one sharing the key ``order-7``, and a text one keyed ``Aa``, whose
    index hash it shares with ``BB``; the two ``order-7`` ones on different brokers."""
    invoke(cluster, "updateTopic", "-t", TOPIC, "-r", "2", "-w", "2")
    results: dict[str, SendResult] = {}
    with SyncProducer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:

        def send_to(broker: str, message: Message) -> SendResult:
            return producer.send_orderly(
                message, selector=lambda qs, m, a: next(q for q in qs if q.broker_name == a), arg=broker
            )

        results["text"] = send_to(
            "broker-a",
            Message(TOPIC, "héllo\nadmin".encode(), tags="TagA", keys="order-7", properties={"color": "red"}),
        )
        results["binary"] = send_to("broker-b", Message(TOPIC, b"\x00\x01\xfe\xff" * 5, keys="order-7"))
        results["Aa"] = send_to("broker-a", Message(TOPIC, b"aa", keys="Aa"))
        results["BB"] = send_to("broker-a", Message(TOPIC, b"bb", keys="BB"))
    assert results["text"].message_queue.broker_name != results["binary"].message_queue.broker_name
    cluster.call(cluster.cluster.wait_dispatched())
    return results


def invoke(cluster: ThreadedCluster, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(admin, [args[0], "-n", cluster.namesrv_addr, *args[1:]], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def as_json(cluster: ThreadedCluster, *args: str) -> Any:
    return json.loads(invoke(cluster, *args, "--json"))


def test_a_message_shows_its_headers_properties_and_text_body(
    cluster: ThreadedCluster, sent: dict[str, SendResult]
) -> None:
    text = sent["text"]
    shown = invoke(cluster, "queryMsgByUniqueKey", "-t", TOPIC, "-i", text.msg_id)
    lines = shown.splitlines()
    assert f"msgId:            {text.msg_id}" in lines
    assert f"offsetMsgId:      {text.offset_msg_id}" in lines
    assert f"queueOffset:      {text.queue_offset}" in lines
    assert "tags:             TagA" in lines and "keys:             order-7" in lines
    assert "  color = red" in lines and f"  UNIQ_KEY = {text.msg_id}" in lines
    assert lines[-3:] == ["body (12 bytes, utf-8):", "héllo", "admin"]
    hexed = invoke(cluster, "queryMsgByUniqueKey", "-t", TOPIC, "-i", text.msg_id, "--hex").splitlines()
    assert hexed[-2:] == ["body (12 bytes, hex):", "00000000  68 c3 a9 6c 6c 6f 0a 61 64 6d 69 6e"]


def test_a_binary_body_is_shown_in_hex(cluster: ThreadedCluster, sent: dict[str, SendResult]) -> None:
    binary = sent["binary"]
    lines = invoke(cluster, "queryMsgById", "-i", binary.offset_msg_id).splitlines()
    assert lines[-3:] == [
        "body (20 bytes, hex):",
        "00000000  00 01 fe ff 00 01 fe ff 00 01 fe ff 00 01 fe ff",
        "00000010  00 01 fe ff",
    ]
    (document,) = as_json(cluster, "queryMsgById", "-i", binary.offset_msg_id)
    assert (document["bodyEncoding"], document["body"]) == ("hex", ("0001feff" * 5))
    assert document["properties"]["UNIQ_KEY"] == binary.msg_id and document["userProperties"] == {}


def test_by_key_across_brokers_with_time_ranges(cluster: ThreadedCluster, sent: dict[str, SendResult]) -> None:
    found = as_json(cluster, "queryMsgByKey", "-t", TOPIC, "-k", "order-7")
    assert sorted(d["msgId"] for d in found) == sorted([sent["text"].msg_id, sent["binary"].msg_id])
    assert {d["storeHost"] for d in found} == {b.address for b in cluster.cluster.brokers}
    by_id = {d["msgId"]: d for d in found}
    assert by_id[sent["text"].msg_id]["body"] == "héllo\nadmin"
    assert by_id[sent["text"].msg_id]["userProperties"] == {"color": "red"}
    stored = by_id[sent["binary"].msg_id]["storeTimestamp"]
    late = as_json(cluster, "queryMsgByKey", "-t", TOPIC, "-k", "order-7", "-b", str(stored), "-e", str(stored))
    assert [d["msgId"] for d in late] == [sent["binary"].msg_id]
    before = invoke(cluster, "queryMsgByKey", "-t", TOPIC, "-k", "order-7", "-e", "2000-01-01T00:00:00", code=1)
    assert "no message of topic AdminMessages has the key 'order-7' stored between" in before
    backwards = invoke(cluster, "queryMsgByKey", "-t", TOPIC, "-k", "x", "-b", "now", "-e", "1000", code=2)
    assert "the end is before the begin" in backwards
    # "Aa" and "BB" share their index hash: each query returns only its own message
    assert [d["body"] for d in as_json(cluster, "queryMsgByKey", "-t", TOPIC, "-k", "Aa")] == ["aa"]
    assert [d["body"] for d in as_json(cluster, "queryMsgByKey", "-t", TOPIC, "-k", "BB")] == ["bb"]


def test_by_queue_offset(cluster: ThreadedCluster, sent: dict[str, SendResult]) -> None:
    text = sent["text"]
    queue = text.message_queue
    place = ["-t", TOPIC, "-b", queue.broker_name, "-i", str(queue.queue_id)]
    document = as_json(cluster, "queryMsgByOffset", *place, "-o", str(text.queue_offset))
    assert document["offsetMsgId"] == text.offset_msg_id and document["body"] == "héllo\nadmin"
    assert "body (12 bytes, utf-8):" in invoke(cluster, "queryMsgByOffset", *place, "-o", str(text.queue_offset))
    missing = invoke(cluster, "queryMsgByOffset", *place, "-o", "99", code=1)
    assert f"Error: no message at offset 99 of {TOPIC}@{queue.broker_name}:{queue.queue_id}" in missing


def test_one_line_errors(cluster: ThreadedCluster, sent: dict[str, SendResult]) -> None:
    client_id = sent["text"].msg_id
    without_topic = invoke(cluster, "queryMsgById", "-i", client_id, code=1)
    assert without_topic == (
        f"Error: {client_id} is not an offset message id; if it is a client message id (UNIQ_KEY), give its"
        " topic (-t)\n"
    )
    assert len(invoke(cluster, "queryMsgById", "-t", TOPIC, "-i", client_id, "--json")) > 0
    unknown = invoke(cluster, "queryMsgByUniqueKey", "-t", TOPIC, "-i", "0" * 32, code=1)
    assert unknown == f"Error: no message of topic {TOPIC} has the unique key {'0' * 32}\n"
    not_found = invoke(cluster, "queryMsgById", "-t", TOPIC, "-i", "0" * 32, code=1)
    assert not_found == f"Error: message {'0' * 32} not found\n"
    no_topic = invoke(cluster, "queryMsgByKey", "-t", "NoSuchTopic", "-k", "k", code=1)
    assert "NoSuchTopic" in no_topic and len(no_topic.splitlines()) == 1
