from __future__ import annotations

import struct

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.protocol import (
    LanguageCode,
    LocalProtocolError,
    RemoteProtocolError,
    RemotingCommand,
    ResponseCode,
    SendMessageResponseHeader,
    SerializeType,
    decode_command,
    encode_frame,
    encode_header,
    ext_value_to_str,
    make_request,
    make_response,
)
from rocketq.protocol.frame import FrameDecoder

# Hand-built from docs/protocol.md#frames and #json-header, shaped like the
# C++ 0.4.4 client: alphabetical keys, numeric extFields, remark "", trailing "\n".
CPP_HEADER = (
    b'{"code":10,"extFields":{"queueId":3,"sysFlag":0,"topic":"TopicTest","unitMode":"0"},'
    b'"flag":0,"language":"CPP","opaque":7,"remark":"","version":63}\n'
)
GOLDEN_CPP_FRAME = (
    b"\x00\x00\x00\x9c"  # frame length 156 = 4 + 147 + 5
    b"\x00"  # serialize type JSON
    b"\x00\x00\x93" + CPP_HEADER + b"hello"  # header length 147 (newline included)
)

# What a Java broker writes for a send response (§1.2 rule 5): values as JSON strings.
GOLDEN_RESPONSE_FRAME = (
    b"\x00\x00\x00\xbd\x00\x00\x00\xb9"
    b'{"code":0,"extFields":{"msgId":"7F000001000051BE0000000000000000","queueId":"3","queueOffset":"12"},'
    b'"flag":1,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":409}'
)


def decode_one(frame: bytes) -> RemotingCommand:
    decoder = FrameDecoder()
    decoder.feed(frame)
    command = decoder.next_command()
    assert command is not None
    assert decoder.buffered == 0
    return command


def test_golden_cpp_request_decodes() -> None:
    command = decode_one(GOLDEN_CPP_FRAME)
    assert command == RemotingCommand(
        code=10,
        language=LanguageCode.CPP,
        version=63,
        opaque=7,
        flag=0,
        remark="",
        ext_fields={"queueId": "3", "sysFlag": "0", "topic": "TopicTest", "unitMode": "0"},
        body=b"hello",
        serialize_type=SerializeType.JSON,
    )
    assert not command.is_response
    assert not command.is_oneway


def test_response_is_encoded_like_a_java_broker() -> None:
    request = decode_one(GOLDEN_CPP_FRAME)
    header = SendMessageResponseHeader(msg_id="7F000001000051BE0000000000000000", queue_id=3, queue_offset=12)
    response = make_response(request, ResponseCode.SUCCESS, ext_fields=header.to_ext_fields())
    assert encode_frame(response) == GOLDEN_RESPONSE_FRAME


def test_make_response_copies_opaque_and_serialize_type() -> None:
    request = make_request(34, opaque=99, serialize_type=SerializeType.ROCKETMQ, oneway=True)
    assert request.is_oneway and not request.is_response
    response = make_response(request, ResponseCode.SYSTEM_ERROR, "boom")
    assert response.opaque == 99
    assert response.serialize_type is SerializeType.ROCKETMQ
    assert response.is_response and not response.is_oneway
    assert response.flag == 1
    assert response.remark == "boom"
    assert response.ext_fields == {}
    assert response.language is LanguageCode.JAVA


def test_response_without_custom_header_still_writes_ext_fields() -> None:
    # Java clients dereference extFields of every response (§1.2 rule 3).
    response = make_response(make_request(34, opaque=1), ResponseCode.SUCCESS)
    assert b'"extFields":{}' in encode_header(response)
    assert b'"remark"' not in encode_header(response)


def test_non_string_ext_values_are_still_written_as_strings() -> None:
    command = RemotingCommand(code=0, ext_fields={"queueId": 3, "ok": True})  # type: ignore[dict-item]
    assert b'"extFields":{"queueId":"3","ok":"true"}' in encode_header(command)


@pytest.mark.parametrize(
    ("value", "text"),
    [("x", "x"), (3, "3"), (-1, "-1"), (True, "true"), (False, "false"), (1.5, "1.5"), (None, None)],
)
def test_ext_value_normalisation(value: object, text: str | None) -> None:
    assert ext_value_to_str(value) == text


def test_incoming_ext_values_of_every_json_type_are_normalised() -> None:
    header = b'{"code":310,"extFields":{"d":4,"k":false,"m":true,"i":"p","z":null,"o":{"a":[1]}}}'
    command = decode_command(0, header)
    assert command.ext_fields == {"d": "4", "k": "false", "m": "true", "i": "p", "o": '{"a":[1]}'}


def test_unknown_keys_and_defaults() -> None:
    command = decode_command(0, b'{"code":105,"serializeTypeCurrentRPC":"JSON","futureKey":[1,2]}')
    assert command.code == 105
    assert command.language is LanguageCode.JAVA
    assert command.ext_fields == {}
    assert command.remark is None


def test_every_json_header_field_is_read_into_its_own_attribute() -> None:
    """Each field, set to a value no other has, lands in its attribute (the decode reads the fields
    by position), whatever order the keys come in."""
    header = b'{"remark":"r","extFields":{"k":"v"},"flag":1,"opaque":77,"version":433,"language":"PYTHON","code":12}'
    command = decode_command(0, header)
    assert (command.code, command.language, command.version, command.opaque, command.flag, command.remark) == (
        12,
        LanguageCode.PYTHON,
        433,
        77,
        1,
        "r",
    )
    assert command.ext_fields == {"k": "v"}


@pytest.mark.parametrize(
    ("wire", "language"),
    [('"GO"', LanguageCode.GO), ('"COBOL"', LanguageCode.OTHER), ("1", LanguageCode.CPP)],
)
def test_language_names_and_numbers(wire: str, language: LanguageCode) -> None:
    command = decode_command(0, b'{"code":0,"language":' + wire.encode() + b"}")
    assert command.language is language


LANGUAGE_NAMES = st.one_of(
    st.sampled_from([member.name for member in LanguageCode]),
    st.sampled_from(["JAVA ", "java", "JAV", "CPPX", "", "OTHER"]),
    st.text(max_size=6),
)


@settings(max_examples=200, deadline=None)
@given(LANGUAGE_NAMES, st.sampled_from([b'{"code":11,', b'{"code":310,', b'{"code":0,']), st.booleans())
def test_a_language_name_is_its_member_else_other(name: str, start: bytes, keep_ext_json: bool) -> None:
    """Whatever the name and the decode (the request lane or the general one): the member of that name,
    OTHER for a name no member has (the common names are compared before the table is asked)."""
    header = start + b'"language":' + msgspec.json.encode(name) + b',"opaque":1}'
    expected = LanguageCode.__members__.get(name, LanguageCode.OTHER)
    assert decode_command(0, header, b"", keep_ext_json=keep_ext_json).language is expected


def test_unknown_request_codes_are_kept_as_ints() -> None:
    assert decode_command(0, b'{"code":4242}').code == 4242


@pytest.mark.parametrize(
    "header",
    [b"", b"not json", b"[1,2]", b'{"flag":0}', b'{"code":"x"}', b"\xff\xfe", b'{"code":1,"extFields":[]}'],
)
def test_bad_json_headers_are_remote_errors(header: bytes) -> None:
    with pytest.raises(RemoteProtocolError):
        decode_command(0, header)


def test_unknown_serialize_type() -> None:
    with pytest.raises(RemoteProtocolError, match="serialize type 7"):
        decode_command(7, b"{}")


# --- binary ROCKETMQ header (§1.3) ---------------------------------------------------


def binary_header(remark: bytes, entries: list[tuple[bytes, bytes]]) -> bytes:
    block = b"".join(struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v for k, v in entries)
    return (
        struct.pack(">hBhii", 10, 0, 409, 7, 2)
        + struct.pack(">i", len(remark))
        + remark
        + struct.pack(">i", len(block))
        + block
    )


def test_golden_binary_header_decodes() -> None:
    header = binary_header(b"r\xc3\xa9", [(b"topic", b"T"), (b"queueId", b"3")])
    assert header[:13].hex() == "000a0001990000000700000002"
    frame = struct.pack(">iI", 4 + len(header) + 2, (1 << 24) | len(header)) + header + b"hi"
    command = decode_one(frame)
    assert command == RemotingCommand(
        code=10,
        language=LanguageCode.JAVA,
        version=409,
        opaque=7,
        flag=2,
        remark="ré",
        ext_fields={"topic": "T", "queueId": "3"},
        body=b"hi",
        serialize_type=SerializeType.ROCKETMQ,
    )
    assert command.is_oneway
    assert encode_header(command) == header


def test_binary_round_trip() -> None:
    command = RemotingCommand(
        code=-5,
        language=LanguageCode.PYTHON,
        version=63,
        opaque=-(2**31),
        flag=2**31 - 1,
        remark="error: 非法",
        ext_fields={"a": "", "ключ": "значение"},
        body=b"\x00\x01",
        serialize_type=SerializeType.ROCKETMQ,
    )
    assert decode_one(encode_frame(command)) == command


def test_binary_empty_remark_reads_as_none() -> None:
    # RocketMQSerializable cannot tell null from "": both are length 0.
    command = RemotingCommand(code=1, remark="", serialize_type=SerializeType.ROCKETMQ)
    assert decode_one(encode_frame(command)).remark is None


@pytest.mark.parametrize(
    "header",
    [
        b"\x00\x0a",  # truncated fixed part
        struct.pack(">hBhii", 1, 0, 1, 1, 0) + struct.pack(">i", 10) + b"abc",  # remark overruns
        struct.pack(">hBhii", 1, 0, 1, 1, 0) + struct.pack(">ii", 0, 50),  # extFields overrun
        binary_header(b"", [(b"k", b"v")])[:-1],  # entry cut short
        binary_header(b"\xff", []),  # remark not UTF-8
    ],
)
def test_bad_binary_headers_are_remote_errors(header: bytes) -> None:
    with pytest.raises(RemoteProtocolError):
        decode_command(1, header)


@pytest.mark.parametrize(
    "command",
    [
        RemotingCommand(code=40000, serialize_type=SerializeType.ROCKETMQ),
        RemotingCommand(code=1, version=70000, serialize_type=SerializeType.ROCKETMQ),
        RemotingCommand(code=1, opaque=2**31),
        RemotingCommand(code=1, flag=-(2**31) - 1),
    ],
)
def test_values_that_do_not_fit_are_local_errors(command: RemotingCommand) -> None:
    with pytest.raises(LocalProtocolError):
        encode_frame(command)


def test_repr_does_not_dump_the_body() -> None:
    text = repr(RemotingCommand(code=11, body=b"x" * 100_000))
    assert "<100000 bytes>" in text
    assert len(text) < 500
