from __future__ import annotations

import json
import zlib

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import (
    BatchItem,
    BrokerData,
    ClusterInfo,
    ConsumeFromWhere,
    ConsumerListBody,
    ConsumerOffsetSerializeWrapper,
    ConsumeType,
    DataVersion,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageModel,
    MessageQueue,
    QueueData,
    RegisterBrokerBody,
    RemoteProtocolError,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicFilterType,
    TopicList,
    TopicRouteData,
    decode_batch,
    encode_batch,
    quote_integer_keys,
)
from rocketq.protocol.frame import FrameDecoder

from .captures import CapturedFrame, captured_frames, frames_named


def body_of(frame: CapturedFrame) -> bytes:
    decoder = FrameDecoder()
    decoder.feed(frame.raw)
    command = decoder.next_command()
    assert command is not None
    assert isinstance(command.body, bytes)
    return command.body


# --- fastjson pre-pass -------------------------------------------------------------


@pytest.mark.parametrize(
    ("fastjson", "standard"),
    [
        (b'{0:"127.0.0.1:10911"}', b'{"0":"127.0.0.1:10911"}'),
        (b'{"offsetTable":{0:12,1:13}}', b'{"offsetTable":{"0":12,"1":13}}'),
        (b"{ -1 : 2 ,\n 10\t:3}", b'{ "-1" : 2 ,\n "10"\t:3}'),
        (b'{"a":[0,1,{2:3}]}', b'{"a":[0,1,{"2":3}]}'),
        (b'{"a":1,"b":2}', b'{"a":1,"b":2}'),
    ],
)
def test_quote_integer_keys(fastjson: bytes, standard: bytes) -> None:
    assert quote_integer_keys(fastjson) == standard
    json.loads(standard)


@pytest.mark.parametrize(
    "text",
    [
        b'{"k":"{0:1}"}',  # looks like a map inside a string value
        b'{"k":"a,1:b"}',
        b'{"{7:8}":"v"}',  # inside a key
        rb'{"k":"x\\\",{0:1}"}',  # escaped backslash, then escaped quote, inside one string
    ],
)
def test_quote_integer_keys_leaves_strings_alone(text: bytes) -> None:
    json.loads(text)
    assert quote_integer_keys(text) == text


def test_quote_integer_keys_escaped_string_then_key() -> None:
    assert json.loads(quote_integer_keys(b'{"k\\"{0:":"x\\\\",1:2}')) == {'k"{0:': "x\\", "1": 2}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_quote_integer_keys_never_changes_standard_json(value: object) -> None:
    data = json.dumps(value).encode()
    assert quote_integer_keys(data) == data


@given(st.dictionaries(st.integers(), st.text(), max_size=6))
def test_quote_integer_keys_fixes_fastjson_maps(table: dict[int, str]) -> None:
    entries = [f"{key}:{json.dumps(value)}" for key, value in table.items()]
    fastjson = ("{" + ",".join(entries) + "}").encode()
    assert msgspec.json.decode(quote_integer_keys(fastjson), type=dict[int, str]) == table


# --- route ---------------------------------------------------------------------------


def test_captured_route_with_unquoted_keys() -> None:
    routes = [f for f in captured_frames() if f.role == "ns" and f.direction == "out"]
    assert routes
    for frame in routes:
        body = body_of(frame)
        assert b"{0:" in body  # fastjson dialect, as the probe sent it
        route = TopicRouteData.decode(body)
        assert route.broker_datas[0].broker_addrs[0].startswith("127.0.0.1:")
        assert route.queue_datas == [
            QueueData(broker_name="broker-a", read_queue_nums=4, write_queue_nums=4, perm=6, topic_sys_flag=0)
        ]
        assert route.order_topic_conf is None


def test_route_encodes_standard_json_and_round_trips() -> None:
    route = TopicRouteData(
        order_topic_conf="broker-a:4",
        queue_datas=[QueueData(broker_name="broker-a", read_queue_nums=4, write_queue_nums=4, perm=6)],
        broker_datas=[
            BrokerData(
                cluster="C",
                broker_name="broker-a",
                broker_addrs={0: "10.0.0.1:10911", 1: "10.0.0.2:10911"},
            )
        ],
    )
    data = route.encode()
    assert json.loads(data)["brokerDatas"][0]["brokerAddrs"] == {"0": "10.0.0.1:10911", "1": "10.0.0.2:10911"}
    assert TopicRouteData.decode(data) == route


def test_pre_4_9_route_field_name_is_ignored() -> None:
    body = (
        b'{"brokerDatas":[],"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":1,'
        b'"topicSynFlag":0,"writeQueueNums":1}]}'
    )
    assert TopicRouteData.decode(body).queue_datas[0].topic_sys_flag == 0


# --- heartbeat -----------------------------------------------------------------------


def test_captured_heartbeats_from_cpp_and_ali_ons() -> None:
    beats = [HeartbeatData.decode(body_of(f)) for f in frames_named("HEART_BEAT")]
    producer_only = beats[0]
    assert producer_only.client_id.endswith("@DEFAULT")
    assert [p.group_name for p in producer_only.producer_data_set] == ["PG_TEST"]
    assert producer_only.consumer_data_set == []

    cpp = next(b for b in beats if b.consumer_data_set and b.client_id.endswith("@DEFAULT"))
    consumer = cpp.consumer_data_set[0]
    assert consumer.consume_type is ConsumeType.CONSUME_PASSIVELY  # ordinal 1
    assert consumer.message_model is MessageModel.CLUSTERING  # ordinal 1
    assert consumer.consume_from_where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET  # ordinal 0
    assert {s.topic for s in consumer.subscription_data_set} == {"%RETRY%CG_TEST", "TopicTest"}
    assert all(s.sub_version == 1795297197584 for s in consumer.subscription_data_set)  # was a string

    ons = [b for b in beats if b.client_id.startswith("192.0.2.2@")]
    assert ons
    assert ons[-1].consumer_data_set[0].group_name == "CG_ONS"
    assert ons[-1].consumer_data_set[0].consume_type is ConsumeType.CONSUME_PASSIVELY
    assert ons[-1].consumer_data_set[0].subscription_data_set[0].expression_type == "TAG"


def test_heartbeat_encodes_java_names() -> None:
    body = (
        b'{"clientID":"c","consumerDataSet":[{"consumeFromWhere":"5","consumeType":0,'
        b'"groupName":"g","messageModel":0}]}'
    )
    beat = HeartbeatData.decode(body)
    consumer = json.loads(beat.encode())["consumerDataSet"][0]
    assert consumer["consumeType"] == "CONSUME_ACTIVELY"
    assert consumer["messageModel"] == "BROADCASTING"
    assert consumer["consumeFromWhere"] == "CONSUME_FROM_TIMESTAMP"
    assert HeartbeatData.decode(beat.encode()) == beat


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"nope",
        b'{"producerDataSet":[]}',  # clientID missing
        b'{"clientID":"c","consumerDataSet":[{"consumeType":9,"groupName":"g","messageModel":1,"consumeFromWhere":0}]}',
        b'{"clientID":"c","consumerDataSet":[{"consumeType":"PUSH","groupName":"g","messageModel":1,'
        b'"consumeFromWhere":0}]}',
    ],
)
def test_bad_heartbeats(body: bytes) -> None:
    with pytest.raises(RemoteProtocolError):
        HeartbeatData.decode(body)


def test_missing_field_message_names_it() -> None:
    with pytest.raises(RemoteProtocolError, match="clientID"):
        HeartbeatData.decode(b"{}")


# --- cluster, registration and the rest ------------------------------------------------


def test_cluster_info_both_dialects() -> None:
    fastjson = (
        b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"ip:10911"},"brokerName":"broker-a",'
        b'"cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
    )
    info = ClusterInfo.decode(fastjson)
    assert info.broker_addr_table["broker-a"].broker_addrs == {0: "ip:10911"}
    assert info.cluster_addr_table == {"DefaultCluster": ["broker-a"]}
    assert ClusterInfo.decode(info.encode()) == info


def register_body() -> RegisterBrokerBody:
    table = {
        "TopicTest": TopicConfig(topic_name="TopicTest", read_queue_nums=4, write_queue_nums=4),
        "%RETRY%g": TopicConfig(
            topic_name="%RETRY%g",
            read_queue_nums=1,
            write_queue_nums=1,
            topic_filter_type=TopicFilterType.MULTI_TAG,
        ),
    }
    wrapper = TopicConfigSerializeWrapper(
        topic_config_table=table, data_version=DataVersion(timestamp=1700000000000, counter=3)
    )
    return RegisterBrokerBody(topic_config_serialize_wrapper=wrapper, filter_server_list=[])


def test_register_broker_body_json() -> None:
    body = register_body()
    wire = json.loads(body.encode())
    assert wire["topicConfigSerializeWrapper"]["dataVersion"] == {"timestamp": 1700000000000, "counter": 3}
    topic = wire["topicConfigSerializeWrapper"]["topicConfigTable"]["TopicTest"]
    assert topic == {
        "topicName": "TopicTest",
        "readQueueNums": 4,
        "writeQueueNums": 4,
        "perm": 6,
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": 0,
        "order": False,
    }
    assert RegisterBrokerBody.decode(body.encode()) == body


def test_register_broker_body_compressed_round_trip() -> None:
    body = register_body()
    compressed = body.encode_compressed()
    raw = zlib.decompress(compressed)
    assert raw[:4] == len(b'{"timestamp":1700000000000,"counter":3}').to_bytes(4, "big")
    assert b"TopicTest 4 4 6 SINGLE_TAG" in raw
    assert RegisterBrokerBody.decode_compressed(compressed) == body


@pytest.mark.parametrize("data", [b"not zlib", zlib.compress(b"\x00\x00\x00\x05{}"), zlib.compress(b"")])
def test_corrupt_compressed_register_body(data: bytes) -> None:
    with pytest.raises(RemoteProtocolError):
        RegisterBrokerBody.decode_compressed(data)


def test_lock_batch_bodies() -> None:
    request = (
        b'{"clientId":"cid","consumerGroup":"CG_TEST",'
        b'"mqSet":[{"brokerName":"broker-a","queueId":1,"topic":"%RETRY%CG_TEST"}]}'
    )
    lock = LockBatchRequestBody.decode(request)
    mq = MessageQueue(topic="%RETRY%CG_TEST", broker_name="broker-a", queue_id=1)
    assert lock.mq_set == [mq]
    assert lock.client_id == "cid"
    assert {mq, MessageQueue(topic="%RETRY%CG_TEST", broker_name="broker-a", queue_id=1)} == {mq}
    response = LockBatchResponseBody(lock_ok_mq_set=[mq])
    assert json.loads(response.encode()) == {
        "lockOKMQSet": [{"topic": "%RETRY%CG_TEST", "brokerName": "broker-a", "queueId": 1}]
    }


def test_small_bodies() -> None:
    assert ConsumerListBody(consumer_id_list=["b", "a"]).encode() == b'{"consumerIdList":["b","a"]}'
    assert TopicList(topic_list=["t1"]).encode() == b'{"topicList":["t1"]}'
    assert TopicList.decode(b'{"topicList":["t1"],"brokerAddr":"x"}').broker_addr == "x"
    offsets = ConsumerOffsetSerializeWrapper.decode(b'{"offsetTable":{"t@g":{0:12,1:"13"}}}')
    assert offsets.offset_table == {"t@g": {0: 12, 1: 13}}


def test_batch_body_round_trip_and_damage() -> None:
    items = [BatchItem(b"one", "TAGS\x01a", 3), BatchItem(b"", ""), BatchItem(b"\x00" * 300, "K\x01\u00e9")]
    body = encode_batch(items)
    assert decode_batch(body) == items
    assert decode_batch(memoryview(body)) == items
    for cut in (1, 10, len(body) - 1):
        with pytest.raises(RemoteProtocolError):
            decode_batch(body[:cut])
    bad_total = bytearray(body)
    bad_total[3] += 1  # the first item's total size no longer adds up
    with pytest.raises(RemoteProtocolError, match="do not add up"):
        decode_batch(bytes(bad_total))
