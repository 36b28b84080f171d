"""The send header's own reader (``rocketq.protocol.send_header``) against the generic one
(``ExtFieldsHeader.from_ext_fields``): the same header, or the same error, for every map."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import (
    RemoteProtocolError,
    RequestCode,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    parse_send_message_header,
)
from rocketq.protocol.frame import FrameDecoder

from .captures import frames_named

_NUMBER_FIELDS = ("default_topic_queue_nums", "queue_id", "sys_flag", "born_timestamp", "flag")
_OPTIONAL_NUMBER_FIELDS = ("reconsume_times", "max_reconsume_times")
_BOOLEAN_FIELDS = ("unit_mode", "batch")
_TEXT_FIELDS = ("producer_group", "topic", "default_topic")

_ODD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.lists(st.integers(), max_size=2),
    st.sampled_from(["", " ", "null", "true", "TRUE", "True", "1", "0", "false", "yes", "-", "--1", "+3"]),
    st.sampled_from([" 3", "3 ", "007", "-0", "-007", "3.0", "1e3", "1_000", "\uff13", "\u00b3", "0x10"]),
    st.text(max_size=6),
)
_NUMBER_TEXTS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.integers(min_value=-(10**18), max_value=10**18).map(str),
    st.sampled_from(["0", "1", "-1", "999999999999999999", "1000000000000000000", "-999999999999999999"]),
)


def _value(kind: str) -> st.SearchStrategy[Any]:
    if kind in _NUMBER_FIELDS or kind in _OPTIONAL_NUMBER_FIELDS:
        plain = _NUMBER_TEXTS
    elif kind in _BOOLEAN_FIELDS:
        plain = st.sampled_from(["true", "false", "1", "0"])
    else:
        plain = st.text(max_size=12)
    return st.one_of(plain, plain, plain, _ODD_VALUES)


@st.composite
def ext_fields(draw: st.DrawFn, header_type: type[SendMessageRequestHeader]) -> dict[str, Any]:
    """A map with each of the header's fields present (usually written plainly) or absent, and a few
    other keys."""
    fields: dict[str, Any] = {}
    for name, key in zip(header_type.__struct_fields__, header_type.__struct_encode_fields__, strict=True):
        if draw(st.integers(0, 9)) > 0:
            fields[key] = draw(_value(name))
    fields.update(draw(st.dictionaries(st.sampled_from(["AccessKey", "bname", "x", "rqIdempotent"]), st.text())))
    return fields


def _outcome(parse: Any, fields: dict[str, Any]) -> tuple[str, Any]:
    try:
        header = parse(fields)
    except RemoteProtocolError as exc:
        return "error", str(exc)
    return type(header).__name__, header


def _assert_same(code: int, header_type: type[SendMessageRequestHeader], fields: dict[str, Any]) -> None:
    ours = _outcome(lambda given: parse_send_message_header(code, given), fields)
    generic = _outcome(header_type.from_ext_fields, fields)
    assert ours == generic


@given(
    ext_fields(SendMessageRequestHeaderV2),
    st.sampled_from([RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE]),
)
def test_v2_header_read_as_the_generic_reader_reads_it(fields: dict[str, Any], code: int) -> None:
    _assert_same(code, SendMessageRequestHeaderV2, fields)


@given(ext_fields(SendMessageRequestHeader))
def test_long_header_read_as_the_generic_reader_reads_it(fields: dict[str, Any]) -> None:
    _assert_same(RequestCode.SEND_MESSAGE, SendMessageRequestHeader, fields)


@given(st.builds(
    SendMessageRequestHeaderV2,
    producer_group=st.text(max_size=8),
    topic=st.text(max_size=8),
    default_topic=st.text(max_size=8),
    default_topic_queue_nums=st.integers(-(2**63), 2**63 - 1),
    queue_id=st.integers(-(2**31), 2**31 - 1),
    sys_flag=st.integers(0, 2**31 - 1),
    born_timestamp=st.integers(0, 2**63 - 1),
    flag=st.integers(-(2**31), 2**31 - 1),
    properties=st.none() | st.text(max_size=20),
    reconsume_times=st.none() | st.integers(0, 100),
    unit_mode=st.booleans(),
    batch=st.booleans(),
    max_reconsume_times=st.none() | st.integers(-1, 100),
))  # fmt: skip
def test_what_a_client_writes_is_read_back(header: SendMessageRequestHeaderV2) -> None:
    assert parse_send_message_header(RequestCode.SEND_MESSAGE_V2, header.to_ext_fields()) == header
    long = header.to_v1()
    assert parse_send_message_header(RequestCode.SEND_MESSAGE, long.to_ext_fields()) == long


@pytest.mark.parametrize("name", ["SEND_MESSAGE", "SEND_MESSAGE_V2"])
def test_captured_client_headers_read_as_the_generic_reader_reads_them(name: str) -> None:
    for frame in frames_named(name):
        decoder = FrameDecoder()
        decoder.feed(frame.raw)
        command = decoder.next_command()
        assert command is not None
        header_type = (
            SendMessageRequestHeaderV2 if command.code != RequestCode.SEND_MESSAGE else SendMessageRequestHeader
        )
        _assert_same(command.code, header_type, command.ext_fields)


def test_a_missing_field_is_the_generic_readers_error() -> None:
    fields = SendMessageRequestHeaderV2(
        producer_group="g", topic="t", default_topic="TBW102", default_topic_queue_nums=4, queue_id=0, sys_flag=0,
        born_timestamp=1, flag=0,
    ).to_ext_fields()  # fmt: skip
    del fields["b"]
    with pytest.raises(RemoteProtocolError, match="missing required field `b`"):
        parse_send_message_header(RequestCode.SEND_MESSAGE_V2, fields)
