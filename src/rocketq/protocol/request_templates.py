"""The JSON headers of the clients' two most frequent requests (SEND_MESSAGE_V2 and PULL_MESSAGE),
written from templates instead of through a dict and the generic encoder (compiled: every send and every
pull goes through here). A push consumer keeps each queue's pull header cut around its three changing
values (``pull_header_parts``), so its next pull only writes those and the opaque.

Each template writes exactly the bytes ``encode_json_header`` writes for the same command (keys in the
same order, text escaped by the same encoder): ``tests/protocol/test_request_templates.py`` holds them
equal for any values (hypothesis). The request still carries its ``ext_fields`` dict (for ``==``, for a
signer that adds to it, for logs); the header goes in ``RemotingCommand.encoded_header``, which
``encode_header`` then writes as it is. Whoever changes a request's fields afterwards must drop its
``encoded_header`` (``Credentials.sign`` does).

Text that may need escaping (groups, topics, properties, expressions) goes through msgspec's JSON
encoder, the generic encoder's own; the names that repeat from request to request (groups, topics,
subscription expressions) are kept escaped in a bounded table (``json_text``).
"""

from __future__ import annotations

from typing import Final

import msgspec

from rocketq.protocol.command import JSON_HEADER_END, ONEWAY_FLAG, json_header_before_opaque

_encode: Final = msgspec.json.Encoder().encode
"""The generic encoder's own string writer (bound once: compiled code calls it at once)."""

_TEXTS: dict[str, str] = {}
"""Names already written as JSON text (quotes included), by name."""
TEXTS_KEPT: Final = 4096
"""Names kept escaped at most: beyond this, a new name is escaped each time it is written."""

# the header after ``"extFields":{...}``, as encode_json_header writes it for a request with no remark
_REQUEST_TAIL: Final = "}" + json_header_before_opaque(0)
_REQUEST_TAIL_ONEWAY: Final = "}" + json_header_before_opaque(ONEWAY_FLAG)
_REQUEST_END: Final = JSON_HEADER_END


def json_text(name: str) -> str:
    """``name`` as the generic JSON encoder writes a string (quoted, escaped), for names that repeat
    (kept in a table of ``TEXTS_KEPT`` names at most)."""
    text = _TEXTS.get(name)
    if text is None:
        text = _encode(name).decode()
        if len(_TEXTS) < TEXTS_KEPT:
            _TEXTS[name] = text
    return text


def send_request_header(
    code: int,
    opaque: int,
    oneway: bool,
    group: str,
    topic: str,
    create_topic_key: str,
    decimals: tuple[str, str, str, str, str],
    properties: str,
    tail: tuple[str, str, str],
    idempotent_field: str | None,
) -> bytes:
    """The JSON header of a send request (SEND_MESSAGE_V2, SEND_BATCH_MESSAGE) whose ``extFields`` are
    SendMessageRequestHeaderV2's keys as ``send_checks.send_request`` writes them, in this order: a
    ``group``, b ``topic``, c ``create_topic_key``, d e f g h the ``decimals`` (decimal text), i
    ``properties``, j k m the ``tail`` ("0", "true"/"false" each), then ``idempotent_field`` (its value
    "true") when given. ``code`` and ``opaque`` are int32 (the generic encoder refuses others).

    Written in two parts: ``send_header_start`` (what one producer's sends to one topic share, which
    ``SendSettings`` keeps per topic) and ``send_header_rest``."""
    queue_nums, queue_id, sys_flag, born, flag = decimals
    start = send_header_start(code, group, topic, create_topic_key, queue_nums)
    return send_header_rest(start, opaque, oneway, queue_id, sys_flag, born, flag, properties, tail, idempotent_field)


def send_header_start(code: int, group: str, topic: str, create_topic_key: str, queue_nums: str) -> str:
    """The first part of a send request's header (``send_request_header``), up to the queue id's value:
    the code, the group, the topic, the key of the topic to create it from and the queue count."""
    return (
        f'{{"code":{code},"extFields":{{"a":{json_text(group)},"b":{json_text(topic)}'
        f',"c":{json_text(create_topic_key)},"d":"{queue_nums}","e":"'
    )


def send_header_rest(
    start: str,
    opaque: int,
    oneway: bool,
    queue_id: str,
    sys_flag: str,
    born: str,
    flag: str,
    properties: str,
    tail: tuple[str, str, str],
    idempotent_field: str | None,
) -> bytes:
    """A send request's header (``send_request_header``) from its ``start`` (``send_header_start``)
    and the values each request has of its own."""
    end = _REQUEST_TAIL_ONEWAY if oneway else _REQUEST_TAIL
    extra = "" if idempotent_field is None else f',{json_text(idempotent_field)}:"true"'
    reconsume_times, unit_mode, batch = tail
    return (
        f'{start}{queue_id}","f":"{sys_flag}","g":"{born}","h":"{flag}","i":{_encode(properties).decode()}'
        f',"j":"{reconsume_times}","k":"{unit_mode}","m":"{batch}"{extra}{end}{opaque}{_REQUEST_END}'
    ).encode()


def pull_request_header(opaque: int, fields: dict[str, str], max_bytes_field: str | None) -> bytes:
    """The JSON header of a PULL_MESSAGE request whose ``extFields`` are ``fields``:
    PullMessageRequestHeader's keys as ``client.pull.pull_request`` writes them (consumerGroup, topic,
    subscription and expressionType text, the others decimal, in the order below) and then
    ``max_bytes_field`` (its value ``fields[max_bytes_field]``, decimal) when given. ``opaque`` is int32.
    Written as ``pull_header_parts`` filled by ``filled_pull_header``."""
    parts = pull_header_parts(fields, max_bytes_field)
    return filled_pull_header(parts, fields["queueOffset"], fields["sysFlag"], fields["commitOffset"], opaque)


PullHeaderParts = tuple[str, str, str, str]
"""A pull request's header (``pull_request_header``) cut around the values a queue's pulls do not share:
the text before the queue offset's value, between it and the sys flag's, between that and the commit
offset's, and after it up to the opaque."""


def pull_header_parts(fields: dict[str, str], max_bytes_field: str | None) -> PullHeaderParts:
    """``pull_request_header``'s text for ``fields`` without the queue offset, sys flag and commit offset
    values and the opaque (``PullHeaderParts``): what a queue's pulls share, made once per queue by
    ``client.pull.QueuePulls``."""
    extra = "" if max_bytes_field is None else f',{json_text(max_bytes_field)}:"{fields[max_bytes_field]}"'
    return (
        f'{{"code":11,"extFields":{{"consumerGroup":{json_text(fields["consumerGroup"])}'
        f',"topic":{json_text(fields["topic"])},"queueId":"{fields["queueId"]}","queueOffset":"',
        f'","maxMsgNums":"{fields["maxMsgNums"]}","sysFlag":"',
        '","commitOffset":"',
        f'","suspendTimeoutMillis":"{fields["suspendTimeoutMillis"]}"'
        f',"subscription":{json_text(fields["subscription"])},"subVersion":"{fields["subVersion"]}"'
        f',"expressionType":{json_text(fields["expressionType"])}{extra}{_REQUEST_TAIL}',
    )


def filled_pull_header(
    parts: PullHeaderParts, queue_offset: str, sys_flag: str, commit_offset: str, opaque: int
) -> bytes:
    """A pull request's header from its ``parts`` (``pull_header_parts``) and its own values (decimal
    text; ``opaque`` an int32)."""
    head, before_sys_flag, before_commit_offset, rest = parts
    return (
        f"{head}{queue_offset}{before_sys_flag}{sys_flag}{before_commit_offset}{commit_offset}{rest}"
        f"{opaque}{_REQUEST_END}"
    ).encode()
