"""A send's and a pull's answers read from the extFields' JSON text a client's connection keeps
(``send_outcome.send_answer_fields``, ``pull.pull_answer_fields``, ``rocketq.client.answer_fields``) give
what the dict of ``ext_fields`` gives: the same values, results and refusals, for rocketq's and the
captured answers (the probe server's, as the C++ client read them) and any extFields (every JSON type,
duplicated keys, numbers written every way, no extFields at all)."""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.client.errors import MQClientError
from rocketq.client.message import MessageQueue
from rocketq.client.pull import PullResult, broker_id_of, pull_answer_fields, pull_result
from rocketq.client.send_outcome import send_answer_fields, send_result
from rocketq.protocol import RemotingCommand
from rocketq.protocol.header_decode import decode_command
from tests.protocol.captures import captured_frames

QUEUE = MessageQueue("TopicA", "broker-a", 3)
ADDRESS = "127.0.0.1:10911"
SEND_KEYS = ["msgId", "queueId", "queueOffset"]
PULL_KEYS = ["suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset"]
OTHER_KEYS = ["MSG_REGION", "TRACE_ON", "transactionId", "offsetDelta", "topicSysFlag", "", "msgid"]

NUMBER_TEXTS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["0", "-0", "007", " 12", "12 ", "+5", "1_000", "1.0", "1e3", "0x10", "", "٣", "²", "x"]),
)
JSON_LEAVES = st.one_of(
    NUMBER_TEXTS,
    st.text(max_size=12),
    st.integers(-(2**70), 2**70),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
)
JSON_VALUES = st.one_of(
    JSON_LEAVES, st.lists(JSON_LEAVES, max_size=2), st.dictionaries(st.text(max_size=3), JSON_LEAVES)
)


@st.composite
def answer_headers(draw: st.DrawFn) -> bytes:
    """A JSON answer header whose extFields are written entry by entry (so keys may repeat)."""
    code = draw(st.sampled_from([0, 1, 10, 19, 20, 21, 24]))
    entries = draw(st.lists(st.tuples(st.sampled_from(SEND_KEYS + PULL_KEYS + OTHER_KEYS), JSON_VALUES), max_size=8))
    text = "{" + ",".join(f"{json.dumps(key)}:{msgspec.json.encode(value).decode()}" for key, value in entries) + "}"
    ext = "" if draw(st.booleans()) and not entries else f'"extFields":{text},'
    remark = draw(st.sampled_from(["", '"remark":"refused",']))
    header = f'{{"code":{code},{ext}{remark}"flag":1,"language":"JAVA","opaque":9,"version":409}}'
    return header.encode() + (b"\n" if draw(st.booleans()) else b"")


def both_ways(header: bytes, body: bytes = b"") -> tuple[RemotingCommand, RemotingCommand]:
    """The answer as a client's connection keeps it (its extFields' text) and as a dict of them."""
    kept = decode_command(0, header, body, keep_ext_json=True)
    assert kept.ext_json is not None
    return kept, decode_command(0, header, body)


def outcome(reader: Any, answer: RemotingCommand) -> tuple[str, object]:
    try:
        value = reader(answer)
        if isinstance(value, PullResult):  # (its messages compare by what they hold)
            messages = [(m.queue_offset, m.body, m.properties_text) for m in value.messages]
            return "value", (value.status, value.next_begin_offset, value.min_offset, value.max_offset, messages)
        return "value", value
    except (MQClientError, ValueError) as exc:
        return type(exc).__name__, str(exc)


def assert_same_reads(header: bytes, body: bytes = b"") -> None:
    kept, as_dict = both_ways(header, body)
    for reader in (
        lambda answer: send_answer_fields(answer, ADDRESS),
        lambda answer: send_result(answer, QUEUE, "UNIQ", ADDRESS),
        lambda answer: pull_answer_fields(answer, ADDRESS),
        lambda answer: broker_id_of(pull_answer_fields(answer, ADDRESS)[0]),
        lambda answer: pull_result(answer, frozenset(), ADDRESS),
    ):
        assert outcome(reader, kept) == outcome(reader, as_dict)


@settings(max_examples=500, deadline=None)
@given(answer_headers())
def test_any_answer_reads_the_same_from_its_text(header: bytes) -> None:
    try:
        decode_command(0, header, b"")
    except msgspec.DecodeError:
        return
    except Exception:  # (a value the dict cannot hold: see test_malformed_answers_are_the_readers_errors)
        return
    assert_same_reads(header)


def test_rocketq_answers_read_the_same() -> None:
    send = (
        b'{"code":0,"extFields":{"msgId":"7F00000100002A9F0000000000000000","queueId":"5","queueOffset":"77",'
        b'"MSG_REGION":"DefaultRegion","TRACE_ON":"true"},"flag":1,"language":"JAVA","opaque":3,'
        b'"serializeTypeCurrentRPC":"JSON","version":409}'
    )
    kept, _ = both_ways(send)
    assert send_answer_fields(kept, ADDRESS) == ("7F00000100002A9F0000000000000000", "5", "77")
    result = send_result(kept, QUEUE, "UNIQ", ADDRESS)
    assert (result.message_queue.queue_id, result.queue_offset, result.offset_msg_id) == (
        5,
        77,
        kept.ext_fields["msgId"],
    )
    pull = (
        b'{"code":19,"extFields":{"suggestWhichBrokerId":"1","nextBeginOffset":"12","minOffset":"0",'
        b'"maxOffset":"12"},"flag":1,"language":"JAVA","opaque":4,"serializeTypeCurrentRPC":"JSON","version":409}'
    )
    kept, _ = both_ways(pull)
    assert pull_answer_fields(kept, ADDRESS) == ("1", "12", "0", "12")
    assert broker_id_of("1") == 1
    assert_same_reads(send)
    assert_same_reads(pull)


CAPTURED_ANSWERS = [frame for frame in captured_frames() if frame.direction == "out" and frame.role == "broker"]


@pytest.mark.parametrize("frame", CAPTURED_ANSWERS, ids=lambda frame: f"{frame.index}")
def test_captured_answers_read_the_same(frame: Any) -> None:
    header_length = int.from_bytes(frame.raw[5:8], "big")
    header = frame.raw[8 : 8 + header_length]
    assert_same_reads(header, frame.raw[8 + header_length :])
    kept, _ = both_ways(header)
    fields = frame.header["extFields"]
    if "nextBeginOffset" in fields:
        assert pull_answer_fields(kept, ADDRESS) == tuple(fields.get(key) for key in PULL_KEYS)
    if "msgId" in fields:
        assert send_answer_fields(kept, ADDRESS) == tuple(fields.get(key) for key in SEND_KEYS)


def test_there_are_captured_send_and_pull_answers() -> None:
    names = {key for frame in CAPTURED_ANSWERS for key in frame.header["extFields"]}
    assert {"msgId", "nextBeginOffset"} <= names


@pytest.mark.parametrize(
    ("ext", "reader"),
    [
        (b'{"queueId":"\xff"}', "send"),
        (b'{"queueOffset":1e400}', "send"),
        (b'{"nextBeginOffset":"\xff"}', "pull"),
        (b'{"maxOffset":-1e999}', "pull"),
    ],
)
def test_malformed_answers_are_the_readers_errors(ext: bytes, reader: str) -> None:
    """A value the dict cannot hold (the frame itself decodes: its kept extFields are only checked as
    JSON) in a key the reader reads is the reader's MQClientError, naming the broker (a pull loop waits
    it out, a send tries again)."""
    kept = decode_command(0, b'{"code":0,"extFields":' + ext + b',"flag":1,"opaque":1}', b"", keep_ext_json=True)
    with pytest.raises(MQClientError, match=re.escape(f"malformed {reader} response from {ADDRESS}")):
        if reader == "send":
            send_result(kept, QUEUE, "UNIQ", ADDRESS)
        else:
            pull_result(kept, frozenset(), ADDRESS)


def test_a_malformed_value_no_reader_reads_is_not_looked_at() -> None:
    ext = b'{"msgId":"AB","queueId":"3","queueOffset":"8","nextBeginOffset":"5","other":"\xff","\xff":1e400}'
    kept = decode_command(0, b'{"code":0,"extFields":' + ext + b',"flag":1,"opaque":1}', b"", keep_ext_json=True)
    assert send_answer_fields(kept, ADDRESS) == ("AB", "3", "8")
    assert pull_answer_fields(kept, ADDRESS) == (None, "5", None, None)


@pytest.mark.parametrize("text", ["0", "1", "12", "٣"])
def test_a_decimal_suggestion_is_that_broker(text: str) -> None:
    assert broker_id_of(text) == int(text)


@pytest.mark.parametrize("text", [None, "", "-1", "²", "1.0", "x"])
def test_anything_else_suggests_the_master(text: str | None) -> None:
    assert broker_id_of(text) == 0
