"""A server's requests keep their extFields as JSON text until read (``keep_ext_json``); the typed headers
and single values read from that text (``ext_header``, ``ext_value``) must be what the general path gives:
the extFields decoded into a dict and normalised (``decode_command`` without ``keep_ext_json``), then
converted as ``from_ext_fields`` does. Differential tests over the frames rocketq's, Java's (ali-ons),
and the C++ client send, and over arbitrary extFields."""

from __future__ import annotations

from functools import partial
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.protocol import (
    ExtFieldsHeader,
    PullMessageRequestHeader,
    RemoteProtocolError,
    RemotingCommand,
    RequestCode,
    SendMessageRequestHeader,
    decode_command,
    encode_header,
    ext_header,
    ext_value,
)
from rocketq.protocol.headers import IDEMPOTENT_SEND_FIELD, SendMessageRequestHeaderV2, parse_send_message_header
from tests.protocol.captures import captured_frames
from tests.request_strategies import PULLS, SENDS, PullArguments, SendArguments

HEADER_TYPES: dict[int, type[ExtFieldsHeader]] = {
    RequestCode.SEND_MESSAGE: SendMessageRequestHeader,
    RequestCode.SEND_MESSAGE_V2: SendMessageRequestHeaderV2,
    RequestCode.SEND_BATCH_MESSAGE: SendMessageRequestHeaderV2,
    RequestCode.PULL_MESSAGE: PullMessageRequestHeader,
}


def general_header(command: RemotingCommand, header_type: type[ExtFieldsHeader]) -> ExtFieldsHeader:
    """The reference: the header read from the extFields dict, as the broker read it before
    ``ext_header`` (the dict converted as it is, else normalised by ``from_ext_fields``)."""
    if header_type is SendMessageRequestHeaderV2 or header_type is SendMessageRequestHeader:
        code = RequestCode.SEND_MESSAGE_V2 if header_type is SendMessageRequestHeaderV2 else RequestCode.SEND_MESSAGE
        try:
            header: ExtFieldsHeader = msgspec.convert(command.ext_fields, header_type, strict=False)
        except msgspec.ValidationError:
            return parse_send_message_header(code, command.ext_fields)
        return header
    try:
        return msgspec.convert(command.ext_fields, header_type, strict=False)
    except msgspec.ValidationError:
        return header_type.from_ext_fields(command.ext_fields)


def outcome(read: Any) -> tuple[str, object]:
    """What ``read()`` gives: its value, or that it raised RemoteProtocolError (any other error fails)."""
    try:
        return "value", read()
    except RemoteProtocolError:
        return "refused", None


def assert_same_reads(header: bytes, code: int) -> None:
    """Every reader of a request with this JSON ``header`` gets from the kept text what the dict gives."""
    eager = decode_command(0, header, b"body")
    kept = decode_command(0, header, b"body", keep_ext_json=True)
    assert kept.ext_json is not None or kept.header_json == header  # (the request lane keeps the whole header)
    for header_type in {HEADER_TYPES.get(code, SendMessageRequestHeaderV2), PullMessageRequestHeader}:
        fresh = decode_command(0, header, b"body", keep_ext_json=True)
        assert outcome(partial(ext_header, fresh, header_type)) == outcome(partial(general_header, eager, header_type))
    for key in (IDEMPOTENT_SEND_FIELD, "topic", "b", "absent"):
        fresh = decode_command(0, header, b"body", keep_ext_json=True)
        assert ext_value(fresh, key) == eager.ext_fields.get(key)
    assert kept == eager  # (reads ext_fields: decoded from the text, once)
    assert kept.ext_json is None and kept.header_json is None and kept.ext_fields is kept.ext_fields


@settings(max_examples=150, deadline=None)
@given(SENDS)
def test_rocketq_send_requests_read_the_same(arguments: SendArguments) -> None:
    request = arguments.request()
    assert_same_reads(encode_header(request), request.code)


@settings(max_examples=150, deadline=None)
@given(PULLS)
def test_rocketq_pull_requests_read_the_same(arguments: PullArguments) -> None:
    request = arguments.request()
    assert_same_reads(encode_header(request), request.code)


CAPTURED_REQUESTS = [frame for frame in captured_frames() if frame.direction == "in"]


@pytest.mark.parametrize("frame", CAPTURED_REQUESTS, ids=lambda frame: f"{frame.index}-{frame.name}")
def test_captured_cpp_and_alions_requests_read_the_same(frame: Any) -> None:
    header_length = int.from_bytes(frame.raw[5:8], "big")
    header, code = frame.raw[8 : 8 + header_length], frame.header["code"]
    assert_same_reads(header, code)
    if code in HEADER_TYPES:  # (the C++ client's SEND_MESSAGE and pulls, Java's V2 sends: the request lane)
        assert type(decode_command(0, header, b"", keep_ext_json=True).typed_header) is HEADER_TYPES[code]


WIRE_KEYS = sorted(
    {field.encode_name for header_type in HEADER_TYPES.values() for field in msgspec.structs.fields(header_type)}
    | {IDEMPOTENT_SEND_FIELD, "AccessKey", "Signature", "bname"}
)
JSON_LEAVES = st.one_of(
    st.text(max_size=12),
    st.integers(-(2**70), 2**70),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["0", "1", "true", "false", "TRUE", " 12", "12 ", "-0", "1e3", "0x10", "", "3.0"]),
)
JSON_VALUES = st.one_of(
    JSON_LEAVES, st.lists(JSON_LEAVES, max_size=2), st.dictionaries(st.text(max_size=3), JSON_LEAVES, max_size=2)
)


def required_fields(header_type: type[ExtFieldsHeader]) -> st.SearchStrategy[dict[str, Any]]:
    """Values for every field of ``header_type`` that clients send, as rocketq, Java or C++ write them
    (text, or numbers and booleans), so that most drawn headers are valid."""
    entries: dict[str, st.SearchStrategy[Any]] = {}
    for field in msgspec.structs.fields(header_type):
        kind = str(field.type)
        if "bool" in kind:
            entries[field.encode_name] = st.sampled_from([True, False, "true", "false", "0", "1"])
        elif "int" in kind:
            entries[field.encode_name] = st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(0, 99).map(str))
        else:
            entries[field.encode_name] = st.text(max_size=20)
    return st.fixed_dictionaries({}, optional=entries)


@st.composite
def json_headers(draw: st.DrawFn) -> tuple[bytes, int]:
    code = draw(st.sampled_from(sorted(HEADER_TYPES)))
    fields = draw(required_fields(HEADER_TYPES[code]))
    fields.update(draw(st.dictionaries(st.sampled_from(WIRE_KEYS) | st.text(max_size=6), JSON_VALUES, max_size=4)))
    items = list(fields.items())
    order = draw(st.permutations(range(len(items))))
    ext = {items[index][0]: items[index][1] for index in order}
    header: dict[str, Any] = {
        "code": code,
        "flag": 0,
        "language": draw(st.sampled_from(["JAVA", "CPP", 1])),
        "opaque": 7,
    }
    if draw(st.booleans()):
        header["extFields"] = ext
    text = msgspec.json.encode(header)
    return text + b"\n" if draw(st.booleans()) else text, code  # (the C++ client ends its header with a newline)


@settings(max_examples=400, deadline=None)
@given(json_headers())
def test_any_ext_fields_read_the_same(drawn: tuple[bytes, int]) -> None:
    header, code = drawn
    try:
        decode_command(0, header, b"")
    except RemoteProtocolError:
        return  # (a header the general path refuses outright: a value Python cannot hold)
    assert_same_reads(header, code)


def test_a_header_without_ext_fields_reads_as_empty() -> None:
    command = decode_command(0, b'{"code":11,"opaque":1}', keep_ext_json=True)
    assert command.ext_fields == {}
    with pytest.raises(RemoteProtocolError, match="PullMessageRequestHeader"):
        ext_header(decode_command(0, b'{"code":11,"opaque":1}', keep_ext_json=True), PullMessageRequestHeader)


def test_kept_ext_fields_that_are_not_an_object_are_refused_when_read() -> None:
    command = decode_command(0, b'{"code":11,"extFields":[1],"opaque":1}', keep_ext_json=True)
    with pytest.raises(RemoteProtocolError, match="extFields"):
        _ = command.ext_fields
    with pytest.raises(RemoteProtocolError):
        decode_command(0, b'{"code":11,"extFields":[1],"opaque":1}')


def test_a_header_that_is_not_utf8_is_a_remote_error() -> None:
    with pytest.raises(RemoteProtocolError):
        decode_command(0, b'{"code":11,"extFields":{"a":"\xff"},"opaque":1}')


def test_setting_ext_fields_replaces_the_kept_text() -> None:
    command = decode_command(0, b'{"code":11,"extFields":{"a":"1"},"opaque":1}', keep_ext_json=True)
    command.ext_fields = {"b": "2"}
    assert command.ext_json is None and ext_value(command, "a") is None and command.ext_fields == {"b": "2"}


def general_decode(header: bytes) -> RemotingCommand:
    """The request as the general path decodes it: the same JSON after a space, which the request lane
    does not take (its extFields kept as their text)."""
    command = decode_command(0, b" " + header, b"body", keep_ext_json=True)
    assert command.typed_header is None and command.ext_json is not None
    return command


def same_command(lane: RemotingCommand, general: RemotingCommand) -> None:
    values = (lane.code, lane.language, lane.version, lane.opaque, lane.flag, lane.remark, lane.serialize_type)
    assert values == (
        general.code,
        general.language,
        general.version,
        general.opaque,
        general.flag,
        general.remark,
        general.serialize_type,
    )
    assert lane == general and lane.body == general.body


@settings(max_examples=300, deadline=None)
@given(json_headers(), st.sampled_from([b"", b'"remark":"r\\u0001","version":12,']))
def test_the_request_lane_reads_what_the_general_decode_does(drawn: tuple[bytes, int], more: bytes) -> None:
    """A send or pull header that starts as clients write it is read with its typed header in one decode
    (``typed_header``): the command, its typed header (or the header's refusal) and its extFields are what
    the general decode gives; a header the lane cannot read is read by the general decode."""
    header, code = drawn
    header = header.replace(b",", b"," + more, 1)  # (keys after "code", where the lane still takes it)
    try:
        general = general_decode(header)
        general.ext_fields  # noqa: B018 (a value Python cannot hold: refused by both, when read)
    except RemoteProtocolError:
        return
    lane = decode_command(0, header, b"body", keep_ext_json=True)
    header_type = HEADER_TYPES.get(code, SendMessageRequestHeaderV2)
    expected = outcome(partial(ext_header, general_decode(header), header_type))
    assert outcome(partial(ext_header, lane, header_type)) == expected
    if lane.typed_header is not None:
        assert header.startswith((b'{"code":310,', b'{"code":11,', b'{"code":10,', b'{"code":320,'))
        assert ("value", lane.typed_header) == expected
    same_command(lane, general)


def test_rocketq_sends_and_pulls_take_the_request_lane() -> None:
    send = V2_SEND.replace(b'"e":"1"', b'"e":"x"')
    batch = V2_SEND.replace(b'"code":310', b'"code":320')
    lanes = (
        (V2_SEND, SendMessageRequestHeaderV2),
        (batch, SendMessageRequestHeaderV2),
        (LONG_SEND, SendMessageRequestHeader),
        (PULL, PullMessageRequestHeader),
    )
    for header, header_type in lanes:
        lane = decode_command(0, header, b"body", keep_ext_json=True)
        assert type(lane.typed_header) is header_type and lane.ext_json is None
        assert ext_header(lane, header_type) is lane.typed_header
        same_command(lane, general_decode(header))
    refused = decode_command(0, send, b"body", keep_ext_json=True)  # (a queueId that is no number)
    assert refused.typed_header is None and refused.ext_json is not None
    with pytest.raises(RemoteProtocolError, match="invalid SendMessageRequestHeaderV2"):
        ext_header(refused, SendMessageRequestHeaderV2)


V2_SEND = (
    b'{"code":310,"extFields":{"a":"g","b":"T","c":"TBW102","d":"4","e":"1","f":"0","g":"1700000000000","h":"0",'
    b'"i":"UNIQ_KEY\\u0001k\\u0002WAIT\\u0001true","rqIdempotent":"true"},"flag":0,"language":"PYTHON","opaque":9,'
    b'"serializeTypeCurrentRPC":"JSON","version":409}'
)
LONG_SEND = (  # (SEND_MESSAGE as the C++ client writes it: keys sorted, numbers as numbers)
    b'{"code":10,"extFields":{"batch":false,"bornTimestamp":1700000000000,"defaultTopic":"TBW102",'
    b'"defaultTopicQueueNums":4,"flag":0,"producerGroup":"g","properties":"UNIQ_KEY\\u0001k\\u0002",'
    b'"queueId":1,"reconsumeTimes":0,"sysFlag":0,"topic":"T","unitMode":false},"flag":0,"language":"CPP",'
    b'"opaque":5,"serializeTypeCurrentRPC":"JSON","version":409}\n'
)
PULL = (
    b'{"code":11,"extFields":{"consumerGroup":"g","topic":"T","queueId":"0","queueOffset":"5","maxMsgNums":"32",'
    b'"sysFlag":"7","commitOffset":"5","suspendTimeoutMillis":"20000","subscription":"*","subVersion":"0"},'
    b'"flag":0,"language":"JAVA","opaque":3,"version":409}'
)
