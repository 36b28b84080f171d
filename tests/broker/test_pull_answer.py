"""A pull's answer: its header written from a template is the one the generic encoder writes for the
same answer, it leaves as the same frame, and a held pull is answered with exactly what arrived."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker.pull_frames import IN_PLACE_VIEW_BYTES, answer_frame, pull_answer, records_to_write
from rocketq.broker.server import Broker
from rocketq.protocol import (
    FrameDecoder,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SerializeType,
    encode_frame,
    make_response,
)
from rocketq.protocol.command import encode_binary_header
from rocketq.protocol.headers import PullMessageResponseHeader
from rocketq.remoting import RemotingClient
from rocketq.testing import eventually
from rocketq.testing.cluster import wait_dispatched

from .raw import bodies, pull_request, records, send_request, written_as_the_encoder_would

INT32 = st.integers(-(2**31), 2**31 - 1)
OFFSETS = st.integers(0, 2**63 - 1)
PULL_CODES = st.sampled_from(
    [
        ResponseCode.SUCCESS,
        ResponseCode.PULL_NOT_FOUND,
        ResponseCode.PULL_RETRY_IMMEDIATELY,
        ResponseCode.PULL_OFFSET_MOVED,
        ResponseCode.SYSTEM_ERROR,
    ]
)


def _request(opaque: int, serialize_type: SerializeType = SerializeType.JSON) -> RemotingCommand:
    return RemotingCommand(code=RequestCode.PULL_MESSAGE, opaque=opaque, serialize_type=serialize_type)


def _fields(suggested: int, next_offset: int, low: int, high: int) -> dict[str, str]:
    return {
        "suggestWhichBrokerId": str(suggested),
        "nextBeginOffset": str(next_offset),
        "minOffset": str(low),
        "maxOffset": str(high),
    }


@given(PULL_CODES, INT32, st.integers(0, 2**31 - 1), OFFSETS, OFFSETS, OFFSETS, st.binary(max_size=64))
def test_the_template_writes_what_the_encoder_writes(
    code: int, opaque: int, suggested: int, next_offset: int, low: int, high: int, body: bytes
) -> None:
    request = _request(opaque)
    answer = pull_answer(request, code, suggested, next_offset, low, high, body)
    generic = make_response(request, code, ext_fields=_fields(suggested, next_offset, low, high), body=body)
    decoded = written_as_the_encoder_would(answer, generic)
    assert PullMessageResponseHeader.from_ext_fields(decoded.ext_fields).to_ext_fields() == decoded.ext_fields


@given(
    PULL_CODES,
    INT32,
    OFFSETS,
    st.lists(st.binary(min_size=1, max_size=2 * IN_PLACE_VIEW_BYTES), min_size=1, max_size=6),
    st.sampled_from([SerializeType.JSON, SerializeType.ROCKETMQ]),
)
def test_records_written_as_views_or_joined_leave_as_one_body(
    code: int, opaque: int, next_offset: int, pieces: list[bytes], serialize_type: SerializeType
) -> None:
    """Whether the store's views are written in place or joined (``records_to_write``), the answer's
    frame is the one with their bytes as one body."""
    request = _request(opaque, serialize_type)
    views = [memoryview(piece) for piece in pieces]
    written = records_to_write(views, sum(len(piece) for piece in pieces))
    in_place = len(pieces) == 1 or sum(map(len, pieces)) >= len(pieces) * IN_PLACE_VIEW_BYTES
    assert isinstance(written, list) == in_place
    answer = pull_answer(request, code, 0, next_offset, 0, next_offset, written)
    generic = make_response(request, code, ext_fields=_fields(0, next_offset, 0, next_offset), body=b"".join(pieces))
    assert answer == generic
    assert encode_frame(answer) == encode_frame(generic)


@given(
    PULL_CODES,
    INT32,
    st.integers(0, 2**31 - 1),
    OFFSETS,
    OFFSETS,
    OFFSETS,
    st.lists(st.binary(min_size=1, max_size=300), max_size=4),
    st.booleans(),
    st.sampled_from([SerializeType.JSON, SerializeType.ROCKETMQ]),
)
def test_a_held_pulls_frame_is_the_frame_of_its_answer(
    code: int,
    opaque: int,
    suggested: int,
    next_offset: int,
    low: int,
    high: int,
    pieces: list[bytes],
    as_views: bool,
    serialize_type: SerializeType,
) -> None:
    """``answer_frame`` (the buffers a held pull's answer is written as, framed around the template's
    header) joins to the frame of the generic answer, records as views or as bytes."""
    request = _request(opaque, serialize_type)
    written: bytes | list[memoryview] = [memoryview(piece) for piece in pieces] if as_views else b"".join(pieces)
    parts = answer_frame(request, code, suggested, next_offset, low, high, written)
    generic = make_response(request, code, ext_fields=_fields(suggested, next_offset, low, high), body=b"".join(pieces))
    assert b"".join(bytes(part) for part in parts) == encode_frame(generic)
    (decoded,) = FrameDecoder().decode(b"".join(bytes(part) for part in parts))
    assert decoded == generic


def test_a_binary_header_request_gets_a_binary_header() -> None:
    request = _request(5, SerializeType.ROCKETMQ)
    answer = pull_answer(request, ResponseCode.SUCCESS, 0, 3, 0, 3, b"records")
    assert answer.encoded_header is None and answer.serialize_type == SerializeType.ROCKETMQ
    assert encode_frame(answer)[8 : 8 + len(encode_binary_header(answer))] == encode_binary_header(answer)


def test_an_opaque_the_wire_cannot_carry_is_encoded_from_the_fields() -> None:
    answer = pull_answer(_request(2**31), ResponseCode.PULL_NOT_FOUND, 0, 0, 0, 0, b"")
    assert answer.encoded_header is None


async def test_a_held_pull_is_answered_with_exactly_what_arrived_and_its_filter_kept(
    broker: Broker, client: RemotingClient
) -> None:
    """A held pull with a tag filter: a message of another tag moves it on without records, the next
    held pull gets exactly the matching message, with the offsets of the queue after it."""
    sent = await client.invoke(broker.address, send_request("TopicF", b"zero", TAGS="TagA"), 3)
    assert sent.code == ResponseCode.SUCCESS
    await wait_dispatched(broker)
    assert broker.context is not None
    holds = broker.context.long_polling

    def held(offset: int) -> asyncio.Task[RemotingCommand]:
        pull = pull_request("TopicF", 0, offset, suspend_ms=60_000, expression="TagA")
        return asyncio.create_task(client.invoke(broker.address, pull, 30))

    first = held(1)
    await eventually(lambda: holds.held_count == 1)
    await client.invoke(broker.address, send_request("TopicF", b"other", TAGS="TagB"), 3)
    skipped = await first
    assert records(skipped) == []
    assert skipped.code in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY)
    assert skipped.ext_fields["nextBeginOffset"] == "2" and skipped.ext_fields["maxOffset"] == "2"

    second = held(2)
    await eventually(lambda: holds.held_count == 1)
    await client.invoke(broker.address, send_request("TopicF", b"wanted", TAGS="TagA"), 3)
    answer = await second
    assert answer.code == ResponseCode.SUCCESS and bodies(answer) == [b"wanted"]
    assert [record.queue_offset for record in records(answer)] == [2]
    header = PullMessageResponseHeader.from_ext_fields(answer.ext_fields)
    assert (header.next_begin_offset, header.min_offset, header.max_offset) == (3, 0, 3)
    assert answer.ext_fields == header.to_ext_fields()


async def test_a_held_binary_header_pull_is_answered_in_its_own_serialize_type(
    broker: Broker, client: RemotingClient
) -> None:
    await client.invoke(broker.address, send_request("TopicG", b"zero"), 3)
    await wait_dispatched(broker)
    assert broker.context is not None
    holds = broker.context.long_polling
    pull = pull_request("TopicG", 0, 1, suspend_ms=60_000)
    pull.serialize_type = SerializeType.ROCKETMQ
    waiting = asyncio.create_task(client.invoke(broker.address, pull, 30))
    await eventually(lambda: holds.held_count == 1)
    await client.invoke(broker.address, send_request("TopicG", b"one"), 3)
    answer = await waiting
    assert answer.serialize_type == SerializeType.ROCKETMQ
    assert answer.code == ResponseCode.SUCCESS and bodies(answer) == [b"one"]
    assert answer.ext_fields["nextBeginOffset"] == "2"
