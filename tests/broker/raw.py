"""Raw protocol requests for broker tests, built the way a client library would send them."""

from __future__ import annotations

import time
from collections.abc import Mapping

from rocketq.common.message import encode_properties
from rocketq.common.record import StoredRecord, decode_record
from rocketq.protocol import FrameDecoder, RemotingCommand, RequestCode, encode_frame, make_request
from rocketq.protocol.command import encode_json_header
from rocketq.protocol.headers import PullMessageRequestHeader, SendMessageRequestHeader
from rocketq.remoting.connection import next_opaque


def request(
    code: int, ext_fields: Mapping[str, str] | None = None, body: bytes = b"", *, version: int | None = None
) -> RemotingCommand:
    if version is None:
        return make_request(code, opaque=next_opaque(), ext_fields=ext_fields, body=body)
    return make_request(code, opaque=next_opaque(), ext_fields=ext_fields, body=body, version=version)


def send_request(
    topic: str, body: bytes, *, queue_id: int = 0, batch: bool = False, **properties: str
) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="PG",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=int(time.time() * 1000),
        flag=0,
        properties=encode_properties(properties),
        batch=batch,
    )
    return request(RequestCode.SEND_MESSAGE, header.to_ext_fields(), body)


def pull_request(
    topic: str,
    queue_id: int,
    offset: int,
    *,
    suspend_ms: int = 0,
    expression: str = "*",
    group: str = "CG",
    max_msg_nums: int = 32,
) -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=max_msg_nums,
        sys_flag=4 | (2 if suspend_ms else 0),
        commit_offset=0,
        suspend_timeout_millis=suspend_ms,
        subscription=expression,
        sub_version=0,
    )
    return request(RequestCode.PULL_MESSAGE, header.to_ext_fields())


def records(response: RemotingCommand) -> list[StoredRecord]:
    data, out, position = bytes(response.body), [], 0
    while position < len(data):
        record = decode_record(data, position)
        out.append(record)
        position += record.total_size
    return out


def bodies(response: RemotingCommand) -> list[bytes]:
    return [record.body for record in records(response)]


def written_as_the_encoder_would(answer: RemotingCommand, generic: RemotingCommand) -> RemotingCommand:
    """Assert that ``answer``, whose JSON header a handler wrote from a template, is ``generic`` (the
    same answer built by ``make_response``): the same header bytes, command and frame. Returns the
    command decoded from its frame."""
    assert answer.encoded_header is not None
    assert answer.encoded_header == encode_json_header(answer)  # (the generic encoder ignores encoded_header)
    assert answer == generic
    assert encode_frame(answer) == encode_frame(generic)
    (decoded,) = FrameDecoder().decode(encode_frame(answer))
    assert decoded == generic
    return decoded
