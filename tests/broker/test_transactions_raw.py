"""Transactions in a Java client's frames (protocol-4x.md §2.8, §5.4): a half message sent with
SEND_MESSAGE_V2, END_TRANSACTION sent oneway, and the broker's CHECK_TRANSACTION_STATE answered the
way Java's ClientRemotingProcessor answers it. The broker's check rounds run on a fake clock."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.broker.server import Broker
from rocketq.common.message import HALF_TOPIC, OP_TOPIC, decode_properties, encode_properties
from rocketq.common.message_id import parse_offset_message_id
from rocketq.common.record import StoredRecord, decode_record
from rocketq.protocol import (
    BatchItem,
    HeartbeatData,
    ProducerData,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    encode_batch,
    make_request,
)
from rocketq.protocol.headers import SendMessageRequestHeader
from rocketq.protocol.transactions import TransactionGroupParts, TransactionGroupResult
from rocketq.remoting import Connection, RemotingClient
from rocketq.remoting.connection import next_opaque
from rocketq.testing import FakeClock
from rocketq.testing.cluster import wait_dispatched

from .conftest import broker_config
from .raw import pull_request, records

GROUP = "JavaTxProducers"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def txn_broker(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Broker]:
    async with Broker(broker_config(tmp_path / "broker"), clock=clock) as running:
        yield running


def half_send(topic: str, body: bytes, unique_id: str, queue_id: int = 1) -> RemotingCommand:
    """SEND_MESSAGE_V2 as Java's TransactionMQProducer sends a half message (sysFlag 4, TRAN_MSG, PGROUP)."""
    properties = {"TRAN_MSG": "true", "PGROUP": GROUP, "UNIQ_KEY": unique_id, "WAIT": "true", "TAGS": "t"}
    fields = {
        "a": GROUP, "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "4",
        "g": str(int(time.time() * 1000)), "h": "0", "i": encode_properties(properties), "j": "0", "k": "false",
        "m": "false", "n": "broker-a",
    }  # fmt: skip
    return make_request(RequestCode.SEND_MESSAGE_V2, opaque=next_opaque(), ext_fields=fields, body=body)


def end_transaction(
    sent: RemotingCommand,
    unique_id: str,
    state: int,
    *,
    from_check: bool = False,
    oneway: bool = True,
    group: str = GROUP,
) -> RemotingCommand:
    """END_TRANSACTION with EndTransactionRequestHeader's fields as Java writes them (oneway, as Java
    sends it, or not, to see the broker's answer)."""
    _, _, commit_log_offset = parse_offset_message_id(sent.ext_fields["msgId"])
    fields = {
        "producerGroup": group,
        "tranStateTableOffset": sent.ext_fields["queueOffset"],
        "commitLogOffset": str(commit_log_offset),
        "commitOrRollback": str(state),
        "fromTransactionCheck": "true" if from_check else "false",
        "msgId": unique_id,
        "transactionId": unique_id,
        "bname": "broker-a",
    }
    return make_request(RequestCode.END_TRANSACTION, opaque=next_opaque(), ext_fields=fields, oneway=oneway)


async def pulled(client: RemotingClient, broker: Broker, topic: str, queue_id: int) -> list[StoredRecord]:
    await wait_dispatched(broker)
    response = await client.invoke(broker.address, pull_request(topic, queue_id, 0), 3)
    return records(response) if response.code == ResponseCode.SUCCESS else []


async def until_pulled(client: RemotingClient, broker: Broker, topic: str, queue_id: int) -> list[StoredRecord]:
    async with asyncio.timeout(10):  # a oneway END_TRANSACTION has no answer to wait for
        while not (found := await pulled(client, broker, topic, queue_id)):
            await asyncio.sleep(0.02)
    return found


async def test_half_message_and_end_transaction_in_java_frames(txn_broker: Broker, client: RemotingClient) -> None:
    sent = await client.invoke(txn_broker.address, half_send("JavaTx", b"debit 10", "UNIQ-1"), 3)
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    assert sent.ext_fields["queueId"] == "1" and sent.ext_fields["queueOffset"] == "0"
    assert await pulled(client, txn_broker, "JavaTx", 1) == []  # invisible until committed
    (half,) = await pulled(client, txn_broker, HALF_TOPIC, 0)
    _, _, half_offset = parse_offset_message_id(sent.ext_fields["msgId"])
    assert half.physical_offset == half_offset and half.sys_flag == 0  # transaction bits reset
    half_properties = decode_properties(half.properties)
    assert (half_properties["REAL_TOPIC"], half_properties["REAL_QID"], half_properties["TRAN_MSG"]) == (
        "JavaTx",
        "1",
        "true",
    )

    client_connection = await client.connection(txn_broker.address)
    client_connection.oneway(end_transaction(sent, "UNIQ-1", 8))
    (committed,) = await until_pulled(client, txn_broker, "JavaTx", 1)
    assert committed.body == b"debit 10" and committed.sys_flag & 0xC == 8
    assert committed.prepared_transaction_offset == half_offset and committed.queue_offset == 0
    properties = decode_properties(committed.properties)
    assert properties["UNIQ_KEY"] == "UNIQ-1" and properties["PGROUP"] == GROUP and properties["TAGS"] == "t"
    assert not {"TRAN_MSG", "REAL_TOPIC", "REAL_QID"} & set(properties)
    (op,) = await pulled(client, txn_broker, OP_TOPIC, 0)
    assert op.body == b"0" and decode_properties(op.properties)["TAGS"] == "d"  # the half message's queue offset

    client_connection.oneway(end_transaction(sent, "UNIQ-1", 8))  # retried: nothing new
    answered = await client.invoke(txn_broker.address, end_transaction(sent, "UNIQ-1", 12, oneway=False), 3)
    assert answered.code == ResponseCode.SUCCESS  # a late rollback of a committed message changes nothing
    assert len(await pulled(client, txn_broker, "JavaTx", 1)) == 1
    assert len(await pulled(client, txn_broker, OP_TOPIC, 0)) == 1

    second = await client.invoke(txn_broker.address, half_send("JavaTx", b"debit 20", "UNIQ-2"), 3)
    other_group = end_transaction(second, "UNIQ-2", 8, oneway=False, group="Other")
    refused = await client.invoke(txn_broker.address, other_group, 3)
    assert refused.code == ResponseCode.SYSTEM_ERROR and "producer group" in (refused.remark or "")


async def test_check_transaction_state_reaches_a_java_producer(txn_broker: Broker, clock: FakeClock) -> None:
    checks: list[RemotingCommand] = []
    arrived = asyncio.Event()

    async def on_check(request: RemotingCommand, connection: Connection) -> None:
        checks.append(request)
        arrived.set()
        return None

    producer = RemotingClient(handlers={RequestCode.CHECK_TRANSACTION_STATE: on_check})
    try:
        heartbeat = HeartbeatData(client_id="10.0.0.7@4242", producer_data_set=[ProducerData(group_name=GROUP)])
        beat = make_request(RequestCode.HEART_BEAT, opaque=next_opaque(), body=heartbeat.encode())
        assert (await producer.invoke(txn_broker.address, beat, 3)).code == ResponseCode.SUCCESS
        sent = await producer.invoke(txn_broker.address, half_send("JavaTx", b"credit 5", "UNIQ-9", queue_id=2), 3)
        assert sent.code == ResponseCode.SUCCESS
        clock.advance(60)  # one transactionCheckInterval: the half message is older than transactionTimeOut
        assert txn_broker.transaction_checks is not None
        await txn_broker.transaction_checks.wait_rounds(1)
        await asyncio.wait_for(arrived.wait(), 5)
        (check,) = checks
        assert check.code == RequestCode.CHECK_TRANSACTION_STATE and check.is_oneway
        _, _, half_offset = parse_offset_message_id(sent.ext_fields["msgId"])
        assert check.ext_fields == {
            "tranStateTableOffset": sent.ext_fields["queueOffset"],
            "commitLogOffset": str(half_offset),
            "msgId": "UNIQ-9",
            "transactionId": "UNIQ-9",
            "offsetMsgId": sent.ext_fields["msgId"],
        }
        record = decode_record(bytes(check.body))  # the half message, its real topic and queue restored
        assert record.total_size == len(check.body) and record.body == b"credit 5"
        assert (record.topic, record.queue_id) == ("JavaTx", 2)
        assert decode_properties(record.properties)["TRANSACTION_CHECK_TIMES"] == "1"
        connection = await producer.connection(txn_broker.address)
        connection.oneway(end_transaction(sent, "UNIQ-9", 8, from_check=True))
        (committed,) = await until_pulled(producer, txn_broker, "JavaTx", 2)
        assert committed.body == b"credit 5" and committed.prepared_transaction_offset == half_offset
    finally:
        await producer.aclose()


def transactional_batch(topic: str, items: list[BatchItem], part: str, *, cut: int = 0) -> RemotingCommand:
    """A rocketq transactional batch: SEND_BATCH_MESSAGE whose header properties name the transaction."""
    header = SendMessageRequestHeader(
        producer_group=GROUP,
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=4,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=encode_properties(
            {"TRAN_MSG": "true", "PGROUP": GROUP, "TRAN_GROUP_ID": "q:1", "TRAN_GROUP_PART": part}
        ),
        batch=True,
    ).to_v2()
    return make_request(
        RequestCode.SEND_BATCH_MESSAGE,
        opaque=next_opaque(),
        ext_fields=header.to_ext_fields(),
        body=encode_batch(items)[: -cut or None],
    )


async def test_transactional_batches_through_both_store_paths(txn_broker: Broker, client: RemotingClient) -> None:
    """A transactional batch is stored as one half message holding the batch. Its commit is written
    from the wire items by the compiled append; a batch with an item that append leaves to the decoder
    (a delay, which a transactional message drops) is stored message by message. Both make the same
    records visible."""
    wire = [BatchItem(b"m0", encode_properties({"KEYS": "k0"})), BatchItem(b"m1", "", 7)]
    delayed = BatchItem(b"m1", encode_properties({"DELAY": "2"}), 7)
    for items, part in ((wire, "wire"), ([wire[0], delayed], "decoded")):
        sent = await client.invoke(txn_broker.address, transactional_batch("Batched", items, part), 3)
        assert sent.code == ResponseCode.SUCCESS, sent.remark
    assert await pulled(client, txn_broker, "Batched", 0) == []
    halves = await pulled(client, txn_broker, HALF_TOPIC, 0)
    assert [half.body for half in halves] == [encode_batch(wire), encode_batch([wire[0], delayed])]
    assert [decode_properties(half.properties)["TRAN_BATCH"] for half in halves] == ["2", "2"]
    bad = await client.invoke(txn_broker.address, transactional_batch("Batched", wire, "bad", cut=3), 3)
    assert bad.code == ResponseCode.MESSAGE_ILLEGAL and "bad batch body" in (bad.remark or "")

    def without_part(record: StoredRecord) -> dict[str, str]:
        properties = decode_properties(record.properties)
        assert properties.pop("TRAN_GROUP_PART") in ("wire", "decoded")
        return properties

    body = TransactionGroupParts(parts={"wire": 2, "decoded": 2}).encode()
    fields = {"producerGroup": GROUP, "transactionGroupId": "q:1", "commitOrRollback": "8"}
    request = make_request(RequestCode.END_TRANSACTION_GROUP, opaque=next_opaque(), ext_fields=fields, body=body)
    ended = await client.invoke(txn_broker.address, request, 3)
    assert ended.code == ResponseCode.SUCCESS, ended.remark
    assert TransactionGroupResult.decode(ended.body) == TransactionGroupResult(committed=4)
    committed = sorted(await pulled(client, txn_broker, "Batched", 0), key=lambda r: r.prepared_transaction_offset)
    assert [record.body for record in committed] == [b"m0", b"m1", b"m0", b"m1"]
    assert [record.flag for record in committed] == [0, 7, 0, 7] and {r.sys_flag & 0xC for r in committed} == {8}
    assert [r.prepared_transaction_offset for r in committed] == [h.physical_offset for h in halves for _ in "mm"]
    assert [without_part(r) for r in committed[:2]] == [without_part(r) for r in committed[2:]]
    assert "DELAY" not in committed[3].properties and "REAL_TOPIC" not in committed[0].properties
    assert decode_properties(committed[0].properties)["KEYS"] == "k0"


async def test_a_broker_may_reject_transactional_messages(tmp_path: Path, client: RemotingClient) -> None:
    async with Broker(broker_config(tmp_path / "broker", reject_transaction_message=True)) as broker:
        single = await client.invoke(broker.address, half_send("JavaTx", b"x", "UNIQ-R"), 3)
        batch = await client.invoke(broker.address, transactional_batch("JavaTx", [BatchItem(b"y")], "0-0"), 3)
        assert single.code == batch.code == ResponseCode.NO_PERMISSION
        assert await pulled(client, broker, HALF_TOPIC, 0) == []
