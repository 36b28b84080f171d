from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rocketq.namesrv import ORDER_TOPIC_CONFIG, NameServer, NamesrvConfig
from rocketq.protocol import (
    ClusterInfo,
    DataVersion,
    FrameDecoder,
    KVTable,
    RegisterBrokerBody,
    RegisterBrokerRequestHeader,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
    encode_frame,
    make_request,
)
from rocketq.remoting import RemotingClient
from rocketq.remoting.connection import next_opaque
from rocketq.testing import FakeClock, eventually
from tests.protocol.captures import captured_frames

TIMEOUT = 3.0


def local_config(**overrides: float) -> NamesrvConfig:
    return NamesrvConfig(listen_host="127.0.0.1", listen_port=0, **overrides)  # type: ignore[arg-type]


@pytest.fixture
async def namesrv() -> AsyncIterator[NameServer]:
    async with NameServer(local_config()) as server:
        yield server


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    client = RemotingClient()
    yield client
    await client.aclose()


def request(code: int, body: bytes = b"", **fields: str) -> RemotingCommand:
    return make_request(code, opaque=next_opaque(), ext_fields=fields, body=body)


def register_request(
    *,
    topics: dict[str, int],
    cluster: str = "DefaultCluster",
    name: str = "broker-a",
    addr: str = "127.0.0.1:10911",
    broker_id: int = 0,
    counter: int = 1,
    compressed: bool = False,
    crc: int | None = None,
) -> RemotingCommand:
    table = {t: TopicConfig(topic_name=t, read_queue_nums=n, write_queue_nums=n) for t, n in topics.items()}
    wrapper = TopicConfigSerializeWrapper(
        topic_config_table=table, data_version=DataVersion(timestamp=1_700_000_000_000, counter=counter)
    )
    body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper)
    raw = body.encode_compressed() if compressed else body.encode()
    header = RegisterBrokerRequestHeader(
        broker_name=name,
        broker_addr=addr,
        cluster_name=cluster,
        ha_server_addr=addr.rsplit(":", 1)[0] + ":10912",
        broker_id=broker_id,
        compressed=compressed,
        body_crc32=zlib.crc32(raw) & 0x7FFFFFFF if crc is None else crc,
    )
    return make_request(RequestCode.REGISTER_BROKER, opaque=next_opaque(), ext_fields=header.to_ext_fields(), body=raw)


async def get_route(client: RemotingClient, namesrv: NameServer, topic: str) -> RemotingCommand:
    return await client.invoke(namesrv.address, request(RequestCode.GET_ROUTEINFO_BY_TOPIC, topic=topic), TIMEOUT)


async def cluster_info(client: RemotingClient, namesrv: NameServer) -> ClusterInfo:
    response = await client.invoke(namesrv.address, request(RequestCode.GET_BROKER_CLUSTER_INFO), TIMEOUT)
    assert response.code == ResponseCode.SUCCESS
    return ClusterInfo.decode(response.body)


async def test_register_then_route(namesrv: NameServer, client: RemotingClient) -> None:
    reply = await client.invoke(namesrv.address, register_request(topics={"TopicTest": 4}), TIMEOUT)
    assert reply.code == ResponseCode.SUCCESS and reply.body == b""  # no ORDER_TOPIC_CONFIG entries yet
    response = await get_route(client, namesrv, "TopicTest")
    assert response.code == ResponseCode.SUCCESS
    route = TopicRouteData.decode(response.body)
    assert route.broker_datas[0].broker_addrs == {0: "127.0.0.1:10911"}
    assert route.broker_datas[0].cluster == "DefaultCluster"
    assert (route.queue_datas[0].read_queue_nums, route.queue_datas[0].perm) == (4, 6)
    # Standard JSON with quoted broker ids, sorted keys, no null orderTopicConf.
    document = json.loads(response.body)
    assert list(document) == sorted(document) and "orderTopicConf" not in document
    assert document["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:10911"}


async def test_unknown_topic_is_topic_not_exist(namesrv: NameServer, client: RemotingClient) -> None:
    response = await get_route(client, namesrv, "Nope")
    assert response.code == ResponseCode.TOPIC_NOT_EXIST == 17
    assert response.remark == "No topic route info in name server for the topic: Nope"
    assert response.body == b""


async def test_compressed_registration(namesrv: NameServer, client: RemotingClient) -> None:
    reply = await client.invoke(namesrv.address, register_request(topics={"Zipped": 2}, compressed=True), TIMEOUT)
    assert reply.code == ResponseCode.SUCCESS
    route = TopicRouteData.decode((await get_route(client, namesrv, "Zipped")).body)
    assert route.queue_datas[0].write_queue_nums == 2


async def test_bad_crc_and_bad_header_are_refused(namesrv: NameServer, client: RemotingClient) -> None:
    reply = await client.invoke(namesrv.address, register_request(topics={"T": 1}, crc=12345), TIMEOUT)
    assert (reply.code, reply.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
    missing = await client.invoke(namesrv.address, request(RequestCode.REGISTER_BROKER, brokerName="x"), TIMEOUT)
    assert missing.code == ResponseCode.SYSTEM_ERROR and "brokerAddr" in (missing.remark or "")
    assert namesrv.route_table.all_topics() == []


async def test_slave_gets_master_address_in_reply_header(namesrv: NameServer, client: RemotingClient) -> None:
    await client.invoke(namesrv.address, register_request(topics={"T": 4}), TIMEOUT)
    namesrv.kv_config.put(ORDER_TOPIC_CONFIG, "T", "broker-a:4")
    slave = register_request(topics={"T": 4}, addr="127.0.0.1:11911", broker_id=1)
    reply = await client.invoke(namesrv.address, slave, TIMEOUT)
    assert reply.ext_fields == {"masterAddr": "127.0.0.1:10911", "haServerAddr": "127.0.0.1:10912"}
    assert KVTable.decode(reply.body).table == {"T": "broker-a:4"}
    route = TopicRouteData.decode((await get_route(client, namesrv, "T")).body)
    assert route.broker_datas[0].broker_addrs == {0: "127.0.0.1:10911", 1: "127.0.0.1:11911"}
    assert route.order_topic_conf is None  # orderMessageEnable is off by default


async def test_cluster_info_topic_lists_and_delete(namesrv: NameServer, client: RemotingClient) -> None:
    address = namesrv.address
    await client.invoke(address, register_request(topics={"T1": 4, "T2": 4}, cluster="c1"), TIMEOUT)
    await client.invoke(
        address, register_request(topics={"T3": 4}, cluster="c2", name="broker-b", addr="127.0.0.1:20911"), TIMEOUT
    )
    info = await cluster_info(client, namesrv)
    assert info.cluster_addr_table == {"c1": ["broker-a"], "c2": ["broker-b"]}
    assert info.broker_addr_table["broker-b"].broker_addrs == {0: "127.0.0.1:20911"}
    topics = await client.invoke(address, request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER), TIMEOUT)
    assert sorted(TopicList.decode(topics.body).topic_list) == ["T1", "T2", "T3"]
    by_cluster = await client.invoke(address, request(RequestCode.GET_TOPICS_BY_CLUSTER, cluster="c2"), TIMEOUT)
    assert TopicList.decode(by_cluster.body).topic_list == ["T3"]
    system = await client.invoke(address, request(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS), TIMEOUT)
    assert TopicList.decode(system.body).topic_list == ["c1", "broker-a", "c2", "broker-b"]
    assert TopicList.decode(system.body).broker_addr == "127.0.0.1:10911"
    deleted = await client.invoke(address, request(RequestCode.DELETE_TOPIC_IN_NAMESRV, topic="T1"), TIMEOUT)
    assert deleted.code == ResponseCode.SUCCESS
    assert (await get_route(client, namesrv, "T1")).code == ResponseCode.TOPIC_NOT_EXIST
    unregister = request(
        RequestCode.UNREGISTER_BROKER,
        brokerName="broker-b",
        brokerAddr="127.0.0.1:20911",
        clusterName="c2",
        brokerId="0",
    )
    assert (await client.invoke(address, unregister, TIMEOUT)).code == ResponseCode.SUCCESS
    assert (await get_route(client, namesrv, "T3")).code == ResponseCode.TOPIC_NOT_EXIST


async def test_kv_config_round_trip_and_order_topic_conf(client: RemotingClient) -> None:
    async with NameServer(NamesrvConfig(listen_host="127.0.0.1", listen_port=0, order_message_enable=True)) as ns:
        address = ns.address
        put = request(RequestCode.PUT_KV_CONFIG, namespace=ORDER_TOPIC_CONFIG, key="T", value="broker-a:4")
        assert (await client.invoke(address, put, TIMEOUT)).code == ResponseCode.SUCCESS
        got = await client.invoke(
            address, request(RequestCode.GET_KV_CONFIG, namespace=ORDER_TOPIC_CONFIG, key="T"), TIMEOUT
        )
        assert (got.code, got.ext_fields) == (ResponseCode.SUCCESS, {"value": "broker-a:4"})
        listed = await client.invoke(
            address, request(RequestCode.GET_KVLIST_BY_NAMESPACE, namespace=ORDER_TOPIC_CONFIG), TIMEOUT
        )
        assert KVTable.decode(listed.body).table == {"T": "broker-a:4"}
        reply = await client.invoke(address, register_request(topics={"T": 4}), TIMEOUT)
        assert KVTable.decode(reply.body).table == {"T": "broker-a:4"}
        route = TopicRouteData.decode((await get_route(client, ns, "T")).body)
        assert route.order_topic_conf == "broker-a:4"
        delete = request(RequestCode.DELETE_KV_CONFIG, namespace=ORDER_TOPIC_CONFIG, key="T")
        assert (await client.invoke(address, delete, TIMEOUT)).code == ResponseCode.SUCCESS
        gone = await client.invoke(
            address, request(RequestCode.GET_KV_CONFIG, namespace=ORDER_TOPIC_CONFIG, key="T"), TIMEOUT
        )
        assert gone.code == ResponseCode.QUERY_NOT_FOUND


async def test_query_data_version(namesrv: NameServer, client: RemotingClient) -> None:
    await client.invoke(namesrv.address, register_request(topics={"T": 4}, counter=7), TIMEOUT)
    fields = {
        "brokerName": "broker-a",
        "brokerAddr": "127.0.0.1:10911",
        "clusterName": "DefaultCluster",
        "brokerId": "0",
    }
    same = DataVersion(timestamp=1_700_000_000_000, counter=7)
    reply = await client.invoke(
        namesrv.address, request(RequestCode.QUERY_DATA_VERSION, same.encode(), **fields), TIMEOUT
    )
    assert reply.ext_fields == {"changed": "false"} and DataVersion.decode(reply.body) == same
    newer = DataVersion(timestamp=1_700_000_000_000, counter=8).encode()
    reply = await client.invoke(namesrv.address, request(RequestCode.QUERY_DATA_VERSION, newer, **fields), TIMEOUT)
    assert reply.ext_fields == {"changed": "true"}


async def test_broker_disappears_when_its_connection_closes(namesrv: NameServer, client: RemotingClient) -> None:
    broker = RemotingClient()
    await broker.invoke(namesrv.address, register_request(topics={"T": 4}), TIMEOUT)
    assert (await get_route(client, namesrv, "T")).code == ResponseCode.SUCCESS
    await broker.aclose()
    await eventually(lambda: namesrv.route_table.pick_topic_route("T") is None)
    assert (await get_route(client, namesrv, "T")).code == ResponseCode.TOPIC_NOT_EXIST
    assert await cluster_info(client, namesrv) == ClusterInfo()


async def test_silent_broker_expires_and_its_connection_is_closed(client: RemotingClient) -> None:
    clock = FakeClock(start=1000.0)
    async with NameServer(local_config(broker_expiry_s=0.8, scan_interval_s=0.1), clock=clock.time) as ns:
        broker = RemotingClient()
        try:
            await broker.invoke(ns.address, register_request(topics={"T": 4}), TIMEOUT)
            connection = await broker.connection(ns.address)
            clock.advance(0.7)
            await asyncio.sleep(0.3)  # scans run meanwhile (fewer on a slow machine: never a false failure)
            assert ns.route_table.pick_topic_route("T") is not None  # not yet: 0.7 s of 0.8 s
            clock.advance(0.2)
            await eventually(lambda: ns.route_table.pick_topic_route("T") is None)
            assert (await get_route(client, ns, "T")).code == ResponseCode.TOPIC_NOT_EXIST
            async with asyncio.timeout(TIMEOUT):
                await connection.closed  # the name server hung up on it, as Java does
        finally:
            await broker.aclose()


async def test_heartbeating_broker_does_not_expire(client: RemotingClient) -> None:
    clock = FakeClock(start=1000.0)
    async with NameServer(local_config(broker_expiry_s=0.6, scan_interval_s=0.1), clock=clock.time) as ns:
        for _ in range(8):  # 4 s on the name server's clock, a heartbeat every 0.5 s
            await client.invoke(ns.address, register_request(topics={"T": 4}), TIMEOUT)
            clock.advance(0.5)
            await asyncio.sleep(0.15)  # a scan or more in between (fewer on a slow machine: never a false failure)
            assert ns.route_table.pick_topic_route("T") is not None
        clock.advance(0.2)  # 0.7 s since the last heartbeat: without heartbeats it would have gone long ago
        await eventually(lambda: ns.route_table.pick_topic_route("T") is None)


async def test_two_name_servers_are_independent(namesrv: NameServer, client: RemotingClient) -> None:
    async with NameServer(local_config()) as other:
        await client.invoke(namesrv.address, register_request(topics={"OnlyHere": 4}), TIMEOUT)
        assert (await get_route(client, namesrv, "OnlyHere")).code == ResponseCode.SUCCESS
        assert (await get_route(client, other, "OnlyHere")).code == ResponseCode.TOPIC_NOT_EXIST
        assert other.route_table.cluster_info() == ClusterInfo()
        other.kv_config.put("ns", "k", "v")
        assert namesrv.kv_config.get("ns", "k") is None


async def test_unknown_request_code(namesrv: NameServer, client: RemotingClient) -> None:
    response = await client.invoke(namesrv.address, request(4242), TIMEOUT)
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    response = await client.invoke(namesrv.address, request(RequestCode.GET_NAMESRV_CONFIG), TIMEOUT)
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


async def read_frame(reader: asyncio.StreamReader) -> tuple[bytes, dict[str, Any]]:
    """One whole frame from a raw socket, and its JSON header as sent."""
    async with asyncio.timeout(TIMEOUT):
        length = int.from_bytes(await reader.readexactly(4), "big")
        frame = length.to_bytes(4, "big") + await reader.readexactly(length)
    header_length = int.from_bytes(frame[4:8], "big") & 0xFFFFFF
    return frame, json.loads(frame[8 : 8 + header_length])


def decode_frame(frame: bytes) -> RemotingCommand:
    decoder = FrameDecoder()
    decoder.feed(frame)
    command = decoder.next_command()
    assert command is not None
    return command


async def test_captured_cpp_route_requests_get_decodable_replies(namesrv: NameServer, client: RemotingClient) -> None:
    queues = {"TopicTest": 4, "%RETRY%CG_TEST": 1, "TBW102": 8}
    await client.invoke(namesrv.address, register_request(topics=queues), TIMEOUT)
    captured = [
        frame
        for frame in captured_frames()
        if frame.role == "ns" and frame.direction == "in" and frame.header.get("language") == "CPP"
    ]
    assert {frame.header["extFields"]["topic"] for frame in captured} == set(queues)
    reader, writer = await asyncio.open_connection("127.0.0.1", namesrv.port)
    try:
        for frame in captured:  # version 63, opaque 0 (or small), extra AccessKey/Signature fields, trailing \n
            writer.write(frame.raw)
            raw_reply, header = await read_frame(reader)
            response = decode_frame(raw_reply)
            assert response.is_response and response.opaque == frame.header["opaque"]
            assert response.code == ResponseCode.SUCCESS and header["extFields"] == {}
            route = TopicRouteData.decode(response.body)
            assert route.queue_datas[0].read_queue_nums == queues[frame.header["extFields"]["topic"]]
            assert json.loads(response.body)["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:10911"}
    finally:
        writer.close()
        await writer.wait_closed()


async def test_reply_ext_fields_are_json_strings_on_the_wire(namesrv: NameServer, client: RemotingClient) -> None:
    await client.invoke(namesrv.address, register_request(topics={"T": 4}), TIMEOUT)
    reader, writer = await asyncio.open_connection("127.0.0.1", namesrv.port)
    try:
        writer.write(encode_frame(register_request(topics={"T": 4}, addr="127.0.0.1:11911", broker_id=1)))
        _, header = await read_frame(reader)
        assert header["extFields"] == {"haServerAddr": "127.0.0.1:10912", "masterAddr": "127.0.0.1:10911"}
        writer.write(encode_frame(request(RequestCode.WIPE_WRITE_PERM_OF_BROKER, brokerName="broker-a")))
        _, header = await read_frame(reader)
        assert header["extFields"] == {"wipeTopicCount": "1"}  # a count, sent as a JSON string
    finally:
        writer.close()
        await writer.wait_closed()
