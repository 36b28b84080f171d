from __future__ import annotations

import types
import typing

import msgspec
import msgspec.structs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.protocol import (
    ConsumerSendMsgBackRequestHeader,
    CreateTopicRequestHeader,
    EndTransactionRequestHeader,
    GetRouteInfoRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    RegisterBrokerRequestHeader,
    RemoteProtocolError,
    RequestCode,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    parse_send_message_header,
)
from rocketq.protocol.ext_fields import ExtFieldsHeader
from rocketq.protocol.frame import FrameDecoder
from rocketq.protocol.headers import IDEMPOTENT_SEND_FIELD

from .captures import CapturedFrame, frames_named


def decode(frame: CapturedFrame) -> dict[str, str]:
    decoder = FrameDecoder()
    decoder.feed(frame.raw)
    command = decoder.next_command()
    assert command is not None
    return command.ext_fields


def test_cpp_send_message_header_from_capture() -> None:
    first = frames_named("SEND_MESSAGE")[0]
    fields = decode(first)
    # The C++ client mixes JSON numbers ("queueId":0) with strings ("bornTimestamp").
    assert first.header["extFields"]["queueId"] == 0
    header = SendMessageRequestHeader.from_ext_fields(fields)
    assert header == SendMessageRequestHeader(
        producer_group="PG_TEST",
        topic="TopicTest",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0,
        born_timestamp=1795297195054,
        flag=0,
        properties="KEYS\x01key-1 key-2\x02TAGS\x01TagA\x02UNIQ_KEY\x010100007F0000680D0000AE9602710100"
        "\x02WAIT\x01true\x02myprop\x01v1\x02",
        reconsume_times=0,
        unit_mode=False,
        batch=False,
    )
    assert parse_send_message_header(RequestCode.SEND_MESSAGE, fields) == header


def test_cpp_batch_flag_one_means_true() -> None:
    batches = [f for f in frames_named("SEND_MESSAGE") if f.header["extFields"]["batch"] == "1"]
    assert len(batches) == 1
    assert SendMessageRequestHeader.from_ext_fields(decode(batches[0])).batch is True


def test_ali_ons_v2_header_from_capture() -> None:
    frame = frames_named("SEND_MESSAGE_V2")[0]
    assert frame.header["extFields"]["k"] is False
    v1 = parse_send_message_header(RequestCode.SEND_MESSAGE_V2, decode(frame))
    assert v1.producer_group == "PG_ONS"
    assert v1.topic == "TopicTest"
    assert v1.queue_id == 2
    assert v1.born_timestamp == 1795297196346
    assert v1.unit_mode is False
    assert v1.batch is False
    assert v1.max_reconsume_times is None


def test_other_captured_request_headers_parse() -> None:
    for frame in frames_named("PULL_MESSAGE"):
        pull = PullMessageRequestHeader.from_ext_fields(decode(frame))
        assert pull.max_msg_nums == 32
        assert pull.sys_flag in {6, 7}
        assert pull.suspend_timeout_millis == 15000
    for frame in frames_named("QUERY_CONSUMER_OFFSET"):
        assert QueryConsumerOffsetRequestHeader.from_ext_fields(decode(frame)).queue_id in range(4)
    commits = [
        UpdateConsumerOffsetRequestHeader.from_ext_fields(decode(frame))
        for frame in frames_named("UPDATE_CONSUMER_OFFSET")
    ]
    assert -1 in {c.commit_offset for c in commits}  # ali-ons, never-consumed queues
    backs = [
        ConsumerSendMsgBackRequestHeader.from_ext_fields(decode(frame))
        for frame in frames_named("CONSUMER_SEND_MSG_BACK")
    ]
    assert backs[0] == ConsumerSendMsgBackRequestHeader(offset=199, group="CG_TEST", delay_level=0)
    ons = [b for b in backs if b.group == "CG_ONS"]
    assert ons[0].max_reconsume_times == 16
    assert ons[0].origin_topic == "TopicTest"
    unregister = UnregisterClientRequestHeader.from_ext_fields(decode(frames_named("UNREGISTER_CLIENT")[0]))
    assert unregister.client_id.endswith("@DEFAULT")
    assert unregister.consumer_group == ""
    route = GetRouteInfoRequestHeader.from_ext_fields(decode(frames_named("GET_ROUTEINFO_BY_TOPIC")[0]))
    assert route == GetRouteInfoRequestHeader(topic="TopicTest")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("true", True),
        ("TRUE", True),
        ("1", True),
        (True, True),
        ("false", False),
        ("0", False),
        (False, False),
    ],
)
def test_lax_booleans(raw: object, expected: bool) -> None:
    fields = {"topic": "T", "acceptStandardJsonOnly": raw}
    assert GetRouteInfoRequestHeader.from_ext_fields(fields).accept_standard_json_only is expected


@pytest.mark.parametrize("raw", ["3", 3, "3.0"])
def test_lax_numbers(raw: object) -> None:
    fields = {"consumerGroup": "g", "topic": "t", "queueId": raw}
    header = QueryConsumerOffsetRequestHeader.from_ext_fields(fields)
    assert header.queue_id == 3


def test_missing_required_field_names_the_wire_field() -> None:
    with pytest.raises(RemoteProtocolError, match="`producerGroup`"):
        SendMessageRequestHeader.from_ext_fields({"topic": "T"})
    with pytest.raises(RemoteProtocolError, match="`a`"):
        SendMessageRequestHeaderV2.from_ext_fields({"b": "T"})
    with pytest.raises(RemoteProtocolError, match="clientID"):
        UnregisterClientRequestHeader.from_ext_fields({"producerGroup": "p"})


def test_wrong_type_is_a_remote_error() -> None:
    with pytest.raises(RemoteProtocolError, match="queueId"):
        QueryConsumerOffsetRequestHeader.from_ext_fields({"consumerGroup": "g", "topic": "t", "queueId": "x"})
    with pytest.raises(RemoteProtocolError, match="compressed"):
        RegisterBrokerRequestHeader.from_ext_fields(
            {
                "brokerName": "b",
                "brokerAddr": "a",
                "clusterName": "c",
                "haServerAddr": "h",
                "brokerId": "0",
                "compressed": "maybe",
            }
        )


def test_to_ext_fields_writes_text_only_and_omits_none() -> None:
    header = SendMessageResponseHeader(msg_id="ID", queue_id=3, queue_offset=12)
    assert header.to_ext_fields() == {"msgId": "ID", "queueId": "3", "queueOffset": "12"}
    end = EndTransactionRequestHeader(
        producer_group="pg",
        tran_state_table_offset=5,
        commit_log_offset=1024,
        commit_or_rollback=8,
        from_transaction_check=True,
        msg_id="m",
    )
    assert end.to_ext_fields() == {
        "producerGroup": "pg",
        "tranStateTableOffset": "5",
        "commitLogOffset": "1024",
        "commitOrRollback": "8",
        "fromTransactionCheck": "true",
        "msgId": "m",
    }
    assert UnregisterClientRequestHeader(client_id="c").to_ext_fields() == {"clientID": "c"}


def test_pull_response_round_trip() -> None:
    header = PullMessageResponseHeader(
        suggest_which_broker_id=0,
        next_begin_offset=3,
        min_offset=0,
        max_offset=3,
    )
    fields = header.to_ext_fields()
    assert fields == {"suggestWhichBrokerId": "0", "nextBeginOffset": "3", "minOffset": "0", "maxOffset": "3"}
    assert PullMessageResponseHeader.from_ext_fields(fields) == header


def test_create_topic_from_cpp_without_order() -> None:
    header = CreateTopicRequestHeader.from_ext_fields(
        {
            "topic": "T",
            "defaultTopic": "TBW102",
            "readQueueNums": 8,
            "writeQueueNums": 8,
            "perm": 6,
            "topicFilterType": "SINGLE_TAG",
        }
    )
    assert header.order is False
    assert header.topic_sys_flag is None


V1 = SendMessageRequestHeader(
    producer_group="PG",
    topic="T",
    default_topic="TBW102",
    default_topic_queue_nums=4,
    queue_id=-1,
    sys_flag=1,
    born_timestamp=1700000000000,
    flag=7,
    properties="TAGS\x01a\x02",
    reconsume_times=2,
    unit_mode=False,
    batch=True,
    max_reconsume_times=16,
)


def test_v1_v2_conversion_both_ways() -> None:
    v2 = V1.to_v2()
    assert v2.to_v1() == V1
    assert SendMessageRequestHeaderV2.from_v1(V1) == v2
    assert v2.to_ext_fields() == {
        "a": "PG",
        "b": "T",
        "c": "TBW102",
        "d": "4",
        "e": "-1",
        "f": "1",
        "g": "1700000000000",
        "h": "7",
        "i": "TAGS\x01a\x02",
        "j": "2",
        "k": "false",
        "l": "16",
        "m": "true",
    }
    parsed = parse_send_message_header(RequestCode.SEND_BATCH_MESSAGE, v2.to_ext_fields())
    assert isinstance(parsed, SendMessageRequestHeader) and parsed == v2  # a V2 header is a long one as it is
    assert msgspec.structs.asdict(parsed) == msgspec.structs.asdict(V1)
    assert parse_send_message_header(RequestCode.SEND_MESSAGE, V1.to_ext_fields()) == V1


def test_v2_and_v1_have_the_same_fields() -> None:
    v1_fields = SendMessageRequestHeader.__struct_fields__
    assert SendMessageRequestHeaderV2.__struct_fields__ == v1_fields
    # the one-letter keys, and rocketq's own idempotent mark under its own name in both forms
    assert sorted(SendMessageRequestHeaderV2.__struct_encode_fields__) == [*"abcdefghijklm", IDEMPOTENT_SEND_FIELD]
    assert SendMessageRequestHeader.__struct_encode_fields__[-1] == IDEMPOTENT_SEND_FIELD


def test_cpp2_batch_marker_in_v2() -> None:
    fields = {**V1.to_v2().to_ext_fields(), "m": "1", "n": "broker-a"}  # 4.9.5+ bname is ignored
    assert SendMessageRequestHeaderV2.from_ext_fields(fields).batch is True


def _header_types() -> list[type[ExtFieldsHeader]]:
    found: list[type[ExtFieldsHeader]] = []
    pending: list[type[ExtFieldsHeader]] = [ExtFieldsHeader]
    while pending:
        for subclass in pending.pop().__subclasses__():
            pending.append(subclass)
            if msgspec.structs.fields(subclass):
                found.append(subclass)
    return sorted(found, key=lambda header_type: header_type.__name__)


def _values_of(declared: object) -> st.SearchStrategy[object]:
    texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
    by_type: dict[object, st.SearchStrategy[object]] = {str: texts, int: st.integers(), bool: st.booleans()}
    members = typing.get_args(declared) if isinstance(declared, types.UnionType) else (declared,)
    return st.one_of(*(st.none() if member is type(None) else by_type[member] for member in members))


@pytest.mark.parametrize("header_type", _header_types(), ids=lambda header_type: header_type.__name__)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_header_writes_its_fields_as_text_in_order_and_reads_them_back(
    header_type: type[ExtFieldsHeader], data: st.DataObject
) -> None:
    fields = msgspec.structs.fields(header_type)
    values = {field.name: data.draw(_values_of(field.type), label=field.name) for field in fields}
    header = header_type(**values)
    text = {True: "true", False: "false"}
    expected = [
        (field.encode_name, text.get(value, str(value)) if type(value) is bool else str(value))
        for field in fields
        if (value := values[field.name]) is not None
    ]
    written = header.to_ext_fields()
    assert list(written.items()) == expected
    assert header_type.from_ext_fields(written) == header
