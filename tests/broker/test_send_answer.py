"""The answer to a stored send: its header written from a template is the one the generic encoder
writes for the same answer, and it leaves as the same frame."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker.handlers.send import one_stored_answer, send_answer
from rocketq.common.message_id import encode_host, joined_offset_message_ids
from rocketq.protocol import (
    LocalProtocolError,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SerializeType,
    encode_frame,
    make_response,
)
from rocketq.protocol.command import encode_binary_header

from .raw import written_as_the_encoder_would

INT32 = st.integers(-(2**31), 2**31 - 1)
hosts = st.builds(encode_host, st.sampled_from(["127.0.0.1", "10.0.0.7", "192.168.255.254"]), st.integers(0, 65535))
offsets = st.lists(st.integers(0, 2**63 - 1), min_size=1, max_size=4)


def _request(opaque: int, serialize_type: SerializeType = SerializeType.JSON) -> RemotingCommand:
    return RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, opaque=opaque, serialize_type=serialize_type)


def _fields(message_ids: str, queue_id: int, queue_offset: int) -> dict[str, str]:
    return {
        "msgId": message_ids,
        "queueId": str(queue_id),
        "queueOffset": str(queue_offset),
        "MSG_REGION": "DefaultRegion",
        "TRACE_ON": "true",
    }


@given(INT32, hosts, offsets, st.integers(0, 2**31 - 1), st.integers(0, 2**63 - 1))
def test_the_template_writes_what_the_encoder_writes(
    opaque: int, host: bytes, physical: list[int], queue_id: int, queue_offset: int
) -> None:
    message_ids = joined_offset_message_ids(host, physical)
    request = _request(opaque)
    answer = send_answer(request, ResponseCode.SUCCESS, message_ids, queue_id, queue_offset)
    generic = make_response(request, ResponseCode.SUCCESS, ext_fields=_fields(message_ids, queue_id, queue_offset))
    written_as_the_encoder_would(answer, generic)


@given(INT32, hosts, st.integers(0, 2**63 - 1), st.integers(0, 2**31 - 1), st.integers(0, 2**63 - 1))
def test_one_stored_message_s_answer_is_send_answer_s(
    opaque: int, host: bytes, physical: int, queue_id: int, queue_offset: int
) -> None:
    """The answer to a send of one message, made from its host's and queue's texts, is the answer
    ``send_answer`` makes from the message id (and the generic encoder's, header and frame); its
    extFields, kept as text, read as the same dict."""
    request = _request(opaque)
    message_id = joined_offset_message_ids(host, [physical])
    answer = one_stored_answer(request, host, physical, queue_id, queue_offset)
    reference = send_answer(request, ResponseCode.SUCCESS, message_id, queue_id, queue_offset)
    assert answer.encoded_header == reference.encoded_header
    assert answer.ext_fields == _fields(message_id, queue_id, queue_offset)
    generic = make_response(request, ResponseCode.SUCCESS, ext_fields=_fields(message_id, queue_id, queue_offset))
    written_as_the_encoder_would(answer, generic)
    assert answer == reference


LATE = [ResponseCode.FLUSH_DISK_TIMEOUT, ResponseCode.FLUSH_SLAVE_TIMEOUT, ResponseCode.SLAVE_NOT_AVAILABLE]


@given(st.sampled_from(LATE), INT32)
def test_other_stored_answers_are_encoded_from_their_fields(code: int, opaque: int) -> None:
    request = _request(opaque)
    answer = send_answer(request, code, "7F00000100002A9F0000000000000010", 3, 7)
    assert answer.encoded_header is None
    assert answer == make_response(request, code, ext_fields=_fields("7F00000100002A9F0000000000000010", 3, 7))
    assert encode_frame(answer) == encode_frame(make_response(request, code, ext_fields=answer.ext_fields))


def test_a_binary_header_request_gets_a_binary_header() -> None:
    request = _request(5, SerializeType.ROCKETMQ)
    answer = send_answer(request, ResponseCode.SUCCESS, "7F00000100002A9F0000000000000010", 0, 0)
    assert answer.encoded_header is None and answer.serialize_type == SerializeType.ROCKETMQ
    assert encode_frame(answer)[8:] == encode_binary_header(answer)


def test_an_opaque_the_wire_cannot_carry_is_refused_as_before() -> None:
    answer = send_answer(_request(2**31), ResponseCode.SUCCESS, "7F00000100002A9F0000000000000010", 0, 0)
    assert answer.encoded_header is None
    with pytest.raises(LocalProtocolError, match="opaque"):
        encode_frame(answer)
