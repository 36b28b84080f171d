"""The send handler reads a send request's header with ``send_header`` (from the request's extFields
JSON text, as a server receives it, or from its dict): for every extFields map, the header it reads is
the one the header's conversion (``parse_send_message_header``) gives, and a header that conversion
refuses is refused with the same error."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rocketq.broker.send_request import send_header
from rocketq.protocol import RemoteProtocolError, RemotingCommand, RequestCode, ext_value
from rocketq.protocol.headers import (
    IDEMPOTENT_SEND_FIELD,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    parse_send_message_header,
)

CODES = [RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE]

NUMBERS = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(str),  # the plain forms clients send
    st.integers(-(10**20), 10**20).map(str),
    st.sampled_from(["0", "-0", "007", "+5", " 5", "5 ", "1.0", "1.5", "1e3", "1_000", "0x10", "", "-", "١٢", "x"]),
)
BOOLEANS = st.sampled_from(["true", "false", "True", "FALSE", "1", "0", "yes", ""])
TEXTS = st.text(max_size=8)

FIELDS = {  # each field's values: plain ones, odd ones the conversion may still read, and wrong ones
    "producer_group": TEXTS,
    "topic": TEXTS,
    "default_topic": TEXTS,
    "default_topic_queue_nums": NUMBERS,
    "queue_id": NUMBERS,
    "sys_flag": NUMBERS,
    "born_timestamp": NUMBERS,
    "flag": NUMBERS,
    "properties": TEXTS,
    "reconsume_times": NUMBERS,
    "unit_mode": BOOLEANS,
    "max_reconsume_times": NUMBERS,
    "batch": BOOLEANS,
}
REQUIRED = {"producer_group", "topic", "default_topic", "default_topic_queue_nums", "queue_id", "sys_flag"}
REQUIRED |= {"born_timestamp", "flag"}


def wire_names(code: int) -> dict[str, str]:
    header_type = SendMessageRequestHeader if code == RequestCode.SEND_MESSAGE else SendMessageRequestHeaderV2
    return {field.name: field.encode_name for field in msgspec.structs.fields(header_type)}


@st.composite
def requests(draw: st.DrawFn) -> RemotingCommand:
    code = draw(st.sampled_from(CODES))
    names = wire_names(code)
    fields: dict[str, str] = {}
    for name, values in FIELDS.items():
        present = draw(st.integers(0, 9)) > (0 if name in REQUIRED else 4)  # (sometimes a required one missing)
        if present:
            fields[names[name]] = draw(values)
    if draw(st.booleans()):  # another request's field, or the idempotent mark: ignored
        fields[draw(st.sampled_from(["rqIdempotent", "zz", "topic", "b"]))] = draw(TEXTS)
    return RemotingCommand(code=code, ext_fields=fields)


def parsed_header(request: RemotingCommand) -> SendMessageRequestHeader:
    return parse_send_message_header(request.code, request.ext_fields)


def as_received(request: RemotingCommand) -> RemotingCommand:
    """``request`` as a server's connection decodes it: its extFields kept as their JSON text."""
    text = msgspec.Raw(msgspec.json.encode(request.ext_fields))
    return RemotingCommand(code=request.code, ext_json=text)


def outcome(read: object, request: RemotingCommand) -> object:
    try:
        return ("values", read(request))  # type: ignore[operator]
    except RemoteProtocolError as exc:
        return ("refused", str(exc))


V2_PLAIN = {"a": "g", "b": "T", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1700000000000", "h": "0"}


@settings(max_examples=600, deadline=None)
@given(request=requests())
@example(request=RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields={**V2_PLAIN, "i": "a\x01b", "m": "true"}))
@example(request=RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields={**V2_PLAIN, "e": "01"}))
@example(request=RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields={**V2_PLAIN, "j": "1e1", "k": "1"}))
def test_the_header_read_is_the_conversions(request: RemotingCommand) -> None:
    expected = outcome(parsed_header, request)
    assert outcome(send_header, request) == expected
    assert outcome(send_header, as_received(request)) == expected


def test_a_plain_v2_header_is_read_as_sent() -> None:
    fields = {**V2_PLAIN, "i": "KEYS\x01k", "j": "3", "l": "16", "m": "false", "e": "-1", "h": "-7"}
    request = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields=fields)
    for received in (request, as_received(request)):
        header = send_header(received)
        values = (header.topic, header.queue_id, header.sys_flag, header.born_timestamp, header.flag)
        assert values == ("T", -1, 0, 1_700_000_000_000, -7)
        assert (header.properties, header.reconsume_times, header.batch, header.max_reconsume_times) == (
            "KEYS\x01k",
            3,
            False,
            16,
        )


MARKS = st.one_of(TEXTS, st.sampled_from(["true", "1", "TRUE", "false", "0", " true", "1.0"]))
"""Values of the idempotent mark as text (how rocketq's producer writes it: "true")."""
JSON_MARKS = st.one_of(st.booleans(), st.integers(-2, 2), st.none(), st.floats(allow_nan=False), MARKS)
"""Values of the mark as other clients could write them: any JSON scalar."""


def mark_by_ext_value(request: RemotingCommand) -> bool:
    """The mark as the broker read it before it was a field of the header: a second pass over the
    extFields (``ext_value``), its value normalised to text."""
    return ext_value(request, IDEMPOTENT_SEND_FIELD) in ("true", "1")


@settings(max_examples=400, deadline=None)
@given(request=requests(), mark=st.none() | JSON_MARKS)
@example(request=RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields=V2_PLAIN), mark="true")
@example(request=RemotingCommand(code=RequestCode.SEND_MESSAGE, ext_fields={}), mark=True)
def test_the_idempotent_mark_read_with_the_header_is_ext_values(request: RemotingCommand, mark: object) -> None:
    """``rq_idempotent``, read in the same decode as the header, marks a send exactly when ``ext_value``
    of ``IDEMPOTENT_SEND_FIELD`` says "true" or "1" (whatever JSON type the value came as), from the JSON
    text a server keeps and from the dict; a header refused is refused either way."""
    fields: dict[str, object] = dict(request.ext_fields)
    if mark is not None:
        fields[IDEMPOTENT_SEND_FIELD] = mark
    received = RemotingCommand(code=request.code, ext_json=msgspec.Raw(msgspec.json.encode(fields)))
    expected = mark_by_ext_value(received)
    as_dict = RemotingCommand(code=request.code, ext_fields=dict(received.ext_fields))
    for sent in (RemotingCommand(code=request.code, ext_json=msgspec.Raw(msgspec.json.encode(fields))), as_dict):
        try:
            header = send_header(sent)
        except RemoteProtocolError:
            with pytest.raises(RemoteProtocolError):
                parsed_header(as_dict)
            continue
        assert (header.rq_idempotent in ("true", "1")) == expected


def test_a_marked_send_header_says_so_in_both_forms() -> None:
    v1 = {"producerGroup": "g", "topic": "T", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4"}
    v1 |= {"queueId": "0", "sysFlag": "0", "bornTimestamp": "1", "flag": "0"}
    for code, fields in ((RequestCode.SEND_MESSAGE_V2, V2_PLAIN), (RequestCode.SEND_MESSAGE, v1)):
        for mark, marked in (("true", True), ("1", True), ("false", False), (None, False)):
            sent = dict(fields) if mark is None else {**fields, IDEMPOTENT_SEND_FIELD: mark}
            header = send_header(RemotingCommand(code=code, ext_json=msgspec.Raw(msgspec.json.encode(sent))))
            assert (header.rq_idempotent in ("true", "1")) is marked
            assert header.topic == "T"
