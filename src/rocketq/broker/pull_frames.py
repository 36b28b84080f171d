"""A pull's answer as it is written: its records (``records_to_write``), its JSON header from a template
with only its numbers formatted, as a ``RemotingCommand`` (``pull_answer``, a fresh pull's, which the
server writes) or straight as the frame's buffers (``answer_frame``, a held pull's, written by long
polling without a command object). ``tests/broker/test_pull_answer.py`` holds both equal to the generic
encoder's (hypothesis)."""

from __future__ import annotations

from typing import Final

from librt.strings import BytesWriter, write_i32_be

from rocketq.protocol import RemotingCommand, ResponseCode
from rocketq.protocol.codes import LanguageCode
from rocketq.protocol.command import (
    DEFAULT_VERSION,
    JSON_ANSWER_BEFORE_OPAQUE,
    JSON_HEADER_END,
    RESPONSE_FLAG,
    Body,
    takes_templated_header,
    templated_response,
)
from rocketq.protocol.frame import encode_frame_parts

MASTER_ID: Final = 0
SLAVE_ID: Final = 1  # the broker a master suggests (SubscriptionGroupConfig's whichBrokerWhenConsumeSlowly default)

IN_PLACE_VIEW_BYTES: Final = 4096
"""An answer's records are written as the store's views when these are this large on average (or
just one): a view costs the transport more than joining a few hundred bytes does (``records_to_write``)."""

_SUCCESS: Final = ResponseCode.SUCCESS  # (bound once: see rocketq.native.modules on enum members)


def records_to_write(views: list[memoryview], total_bytes: int) -> bytes | list[memoryview]:
    """A pull answer's records as they are written: the store's views themselves (taken from the read's
    result, they stay readable until written, see ``GetMessageResult.take_buffers``) when there is one or
    they are ``IN_PLACE_VIEW_BYTES`` on average, else joined into one ``bytes`` (records of this queue
    stored among other queues' come one or a few per view)."""
    if len(views) == 1 or total_bytes >= len(views) * IN_PLACE_VIEW_BYTES:
        return views
    return b"".join(views)


# The JSON header of a pull's answer around its varying values, as ``encode_json_header`` writes it
# (keys in its order, extFields in PullMessageResponseHeader's order, no remark)
_ANSWER_HEAD: Final = '{"code":'
_BEFORE_EXT_FIELDS: Final = ',"extFields":'
_FOUND_HEAD: Final = f"{_ANSWER_HEAD}{int(ResponseCode.SUCCESS)}{_BEFORE_EXT_FIELDS}"
_EXT_HEAD: Final = '{"suggestWhichBrokerId":"'
_BEFORE_NEXT_OFFSET: Final = '","nextBeginOffset":"'
_BEFORE_MIN_OFFSET: Final = '","minOffset":"'
_BEFORE_MAX_OFFSET: Final = '","maxOffset":"'
_EXT_END: Final = '"}'
_EXT_HEAD_OF_MASTER: Final = f"{_EXT_HEAD}{MASTER_ID}{_BEFORE_NEXT_OFFSET}"
_EXT_HEAD_OF_SLAVE: Final = f"{_EXT_HEAD}{SLAVE_ID}{_BEFORE_NEXT_OFFSET}"
_MAX_FRAME_LENGTH: Final = 0x7FFF_FFFF
_JAVA: Final = LanguageCode.JAVA


def _ext_text(suggested: int, next_offset: int, low: int, high: int) -> str:
    """A pull answer's extFields (PullMessageResponseHeader) as JSON text, with only its offsets
    formatted (and the suggested broker when it is neither the master nor the slave a master offers)."""
    if suggested == MASTER_ID:
        head = _EXT_HEAD_OF_MASTER
    elif suggested == SLAVE_ID:
        head = _EXT_HEAD_OF_SLAVE
    else:
        head = f"{_EXT_HEAD}{suggested}{_BEFORE_NEXT_OFFSET}"
    return f"{head}{next_offset}{_BEFORE_MIN_OFFSET}{low}{_BEFORE_MAX_OFFSET}{high}{_EXT_END}"


def _header(code: int, ext_text: str, opaque: int) -> bytes:
    """A pull answer's JSON header with ``ext_text`` as its extFields (``takes_templated_header``)."""
    head = _FOUND_HEAD if code == _SUCCESS else f"{_ANSWER_HEAD}{code}{_BEFORE_EXT_FIELDS}"
    return f"{head}{ext_text}{JSON_ANSWER_BEFORE_OPAQUE}{opaque}{JSON_HEADER_END}".encode()


def pull_answer(
    request: RemotingCommand,
    code: int,
    suggested: int,
    next_offset: int,
    low: int,
    high: int,
    records: bytes | list[memoryview],
) -> RemotingCommand:
    """A pull's answer: ``make_response(request, code, ext_fields=..., body=records)`` with
    PullMessageResponseHeader's fields (suggestWhichBrokerId, nextBeginOffset, minOffset, maxOffset;
    tests/broker/test_broker_raw.py holds them equal). The answer to a JSON request carries its header
    already encoded (``RemotingCommand.encoded_header``), written from a template instead of through the
    generic encoder (every value in it is a number, so nothing needs escaping), and its extFields as
    that JSON text (``ext_json``: made a dict only if read); ``tests/broker/test_pull_answer.py`` holds
    both equal to the generic encoder's."""
    body_parts = records if isinstance(records, list) else None
    body = b"" if isinstance(records, list) else records
    opaque = request.opaque
    if takes_templated_header(request):
        ext_text = _ext_text(suggested, next_offset, low, high)
        return RemotingCommand(
            code=code,
            language=_JAVA,
            version=DEFAULT_VERSION,
            opaque=opaque,
            flag=RESPONSE_FLAG,
            ext_json=ext_text,
            body=body,
            serialize_type=request.serialize_type,
            encoded_header=_header(code, ext_text, opaque),
            body_parts=body_parts,
        )
    fields = {
        "suggestWhichBrokerId": str(suggested),
        "nextBeginOffset": str(next_offset),
        "minOffset": str(low),
        "maxOffset": str(high),
    }
    return templated_response(request, code, fields, None, body, body_parts)


def answer_frame(
    request: RemotingCommand,
    code: int,
    suggested: int,
    next_offset: int,
    low: int,
    high: int,
    records: bytes | list[memoryview],
) -> list[Body]:
    """``encode_frame_parts(pull_answer(...))``: the frame of a pull's answer as the buffers to write
    (a held pull's answer is written so, without a ``RemotingCommand``). An answer to a JSON request
    is framed here around the template's header; any other goes through ``pull_answer``.
    ``tests/broker/test_pull_answer.py`` holds the two equal (hypothesis).

    Raises:
        LocalProtocolError: The frame does not fit the wire format (``encode_frame_parts``).
    """
    if takes_templated_header(request):
        if isinstance(records, list):
            body_size = 0
            for view in records:
                body_size += len(view)  # (the store's views: one byte per item)
        else:
            body_size = len(records)
        header = _header(code, _ext_text(suggested, next_offset, low, high), request.opaque)
        frame_length = 4 + len(header) + body_size
        if frame_length <= _MAX_FRAME_LENGTH:
            head = BytesWriter()
            write_i32_be(head, frame_length)
            write_i32_be(head, len(header))  # (the serialize type, JSON, is 0 in the top byte)
            head.write(header)
            parts: list[Body] = [head.getvalue()]
            if isinstance(records, list):
                parts.extend(records)
            elif body_size:
                parts.append(records)
            return parts
    return encode_frame_parts(pull_answer(request, code, suggested, next_offset, low, high, records))
