"""The send and pull requests' JSON headers, written from templates (``rocketq.protocol.request_templates``),
are the bytes the generic encoder writes for the same command, for any values; the requests leave as the
same frames, and a signed request's header carries its signature."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from rocketq.acl.signing import Credentials
from rocketq.client.config import ProducerConfig
from rocketq.client.message import MessageQueue
from rocketq.client.send_checks import SendSettings, send_request
from rocketq.protocol import FrameDecoder, RemotingCommand, RequestCode, encode_frame
from rocketq.protocol.command import ONEWAY_FLAG, encode_json_header
from rocketq.protocol.request_templates import TEXTS_KEPT, json_text, pull_request_header, send_request_header

from ..request_strategies import INT32, PULLS, SENDS, PullArguments, SendArguments

DECIMAL = st.integers(-(2**63), 2**63 - 1).map(str)


def _generic(command: RemotingCommand) -> bytes:
    """What the generic encoder writes for ``command``'s fields (``encode_json_header`` ignores
    ``encoded_header``)."""
    return encode_json_header(command)


@given(
    st.sampled_from([RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE]),
    INT32,
    st.booleans(),
    st.lists(st.text(), min_size=4, max_size=4),
    st.lists(DECIMAL, min_size=5, max_size=5),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_the_send_template_writes_what_the_encoder_writes(
    code: int,
    opaque: int,
    oneway: bool,
    texts: list[str],
    decimals: list[str],
    unit_mode: bool,
    batch: bool,
    idempotent: bool,
) -> None:
    fields = {
        "a": texts[0],
        "b": texts[1],
        "c": texts[2],
        "d": decimals[0],
        "e": decimals[1],
        "f": decimals[2],
        "g": decimals[3],
        "h": decimals[4],
        "i": texts[3],
        "j": "0",
        "k": "true" if unit_mode else "false",
        "m": "true" if batch else "false",
    }
    if idempotent:
        fields["rqIdempotent"] = "true"
    command = RemotingCommand(code=code, opaque=opaque, flag=ONEWAY_FLAG if oneway else 0, ext_fields=fields)
    written = send_request_header(
        code,
        opaque,
        oneway,
        texts[0],
        texts[1],
        texts[2],
        (decimals[0], decimals[1], decimals[2], decimals[3], decimals[4]),
        texts[3],
        ("0", fields["k"], fields["m"]),
        "rqIdempotent" if idempotent else None,
    )
    assert written == _generic(command)


@given(
    INT32,
    st.lists(st.text(), min_size=4, max_size=4),
    st.lists(DECIMAL, min_size=8, max_size=8),
    st.one_of(st.none(), DECIMAL),
)
def test_the_pull_template_writes_what_the_encoder_writes(
    opaque: int, texts: list[str], decimals: list[str], max_bytes: str | None
) -> None:
    fields = {
        "consumerGroup": texts[0],
        "topic": texts[1],
        "queueId": decimals[0],
        "queueOffset": decimals[1],
        "maxMsgNums": decimals[2],
        "sysFlag": decimals[3],
        "commitOffset": decimals[4],
        "suspendTimeoutMillis": decimals[5],
        "subscription": texts[2],
        "subVersion": decimals[6],
        "expressionType": texts[3],
    }
    if max_bytes is not None:
        fields["rqMaxBytes"] = max_bytes
    command = RemotingCommand(code=RequestCode.PULL_MESSAGE, opaque=opaque, ext_fields=fields)
    written = pull_request_header(opaque, fields, None if max_bytes is None else "rqMaxBytes")
    assert written == _generic(command)


def _leaves_as_the_encoder_would(request: RemotingCommand) -> None:
    assert request.encoded_header is not None
    assert request.encoded_header == _generic(request)
    plain = RemotingCommand(
        code=request.code, opaque=request.opaque, flag=request.flag, ext_fields=request.ext_fields, body=request.body
    )
    assert encode_frame(request) == encode_frame(plain)
    (decoded,) = FrameDecoder().decode(encode_frame(request))
    assert decoded == plain


@given(SENDS)
def test_a_send_request_carries_the_encoders_header(send: SendArguments) -> None:
    _leaves_as_the_encoder_would(send.request())


SHARED_SETTINGS = SendSettings(ProducerConfig(group="SharedGroup"))
"""One producer's settings for every example below: its header starts, kept per topic and code, are
reused across sends (a start written for one topic or code and used for another would show)."""


@given(st.lists(SENDS, min_size=1, max_size=6))
def test_one_producers_send_requests_carry_the_encoders_headers(sends: list[SendArguments]) -> None:
    for send in sends:
        request = send_request(
            SHARED_SETTINGS,
            send.queue,
            b"body",
            send.properties,
            send.sys_flag,
            send.flag,
            batch=send.batch,
            oneway=send.oneway,
            idempotent=send.idempotent,
            born_ms=send.born_ms,
        )
        assert request.ext_fields["a"] == "SharedGroup"
        assert request.ext_fields["b"] == send.queue.topic
        _leaves_as_the_encoder_would(request)


@given(PULLS)
def test_a_pull_request_carries_the_encoders_header(pull: PullArguments) -> None:
    _leaves_as_the_encoder_would(pull.request())


def test_a_signed_request_leaves_with_its_signature() -> None:
    config = ProducerConfig(group="PG")
    request = send_request(SendSettings(config), MessageQueue("T", "broker-a", 0), b"body", "", 0, 0)
    Credentials("RocketMQ", "12345678").sign(request)
    (decoded,) = FrameDecoder().decode(encode_frame(request))
    assert decoded.ext_fields["AccessKey"] == "RocketMQ"
    assert decoded.ext_fields["Signature"] == request.ext_fields["Signature"]
    assert decoded == request


def test_names_beyond_the_table_are_still_escaped() -> None:
    names = [f'topic"{index}\n' for index in range(TEXTS_KEPT + 10)]
    for name in names:
        assert json_text(name) == msgspec.json.encode(name).decode()
    assert json_text(names[-1]) == f'"topic\\"{TEXTS_KEPT + 9}\\n"'
