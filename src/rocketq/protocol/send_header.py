"""The send request's header (SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE) read field by field
(compiled: every send request is parsed here).

The generic reader (``ExtFieldsHeader.from_ext_fields``, ``msgspec.convert`` in lax mode) costs a few
microseconds per request, most of it in the interpreted calls around the conversion. This reader takes
the header's thirteen fields from the ``extFields`` map itself when each of them is written the way
clients write it:

* text fields: a string;
* numbers: decimal digits, ``-`` for a negative one, no leading zero, at most 18 digits;
* booleans: ``"true"``, ``"false"``, ``"1"`` or ``"0"``;
* a field that may be absent: absent.

Anything else (a number written ``"3.0"`` or ``"1e3"``, ``"TRUE"``, a missing required field, a value
that is not a string, ``"null"`` for an optional number) goes to the generic reader, which accepts it as
it always has or raises its error. So the two read every header the same:
``tests/protocol/test_send_header.py`` checks it against the generic reader on generated headers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import msgspec.structs

from rocketq.protocol.codes import RequestCode
from rocketq.protocol.headers import SendMessageRequestHeader, SendMessageRequestHeaderV2

_MAX_DIGITS: Final = 18
"""Longer numbers go to the generic reader (every 18-digit number fits an int64, as the wire's do)."""

_V2_HEADER_CODES: Final = frozenset(
    {RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2}
)


def _wire_keys(header_type: type[SendMessageRequestHeader]) -> tuple[str, ...]:
    """The header's wire names, in the order of its fields (as ``_read`` takes them)."""
    return tuple(field.encode_name for field in msgspec.structs.fields(header_type))


_V1_KEYS: Final = _wire_keys(SendMessageRequestHeader)
_V2_KEYS: Final = _wire_keys(SendMessageRequestHeaderV2)
_FIELD_NAMES: Final = tuple(field.name for field in msgspec.structs.fields(SendMessageRequestHeader))
# _read takes the fields in this order: a change to the header's fields must change _read too
assert _FIELD_NAMES == (
    "producer_group",
    "topic",
    "default_topic",
    "default_topic_queue_nums",
    "queue_id",
    "sys_flag",
    "born_timestamp",
    "flag",
    "properties",
    "reconsume_times",
    "unit_mode",
    "batch",
    "max_reconsume_times",
), _FIELD_NAMES


def parse_send_message_header(code: int, fields: Mapping[str, object]) -> SendMessageRequestHeader:
    """Parse a send request's header, whichever form was sent (a V2 header is a long one too).

    Codes 310, 320 and 325 carry the one-letter header; everything else the long one
    (as in Java's ``AbstractSendMessageProcessor.parseRequestHeader``).

    Raises:
        RemoteProtocolError: The header is invalid.
    """
    if code in _V2_HEADER_CODES:
        header = _read(SendMessageRequestHeaderV2, _V2_KEYS, fields)
        return header if header is not None else SendMessageRequestHeaderV2.from_ext_fields(fields)
    header = _read(SendMessageRequestHeader, _V1_KEYS, fields)
    return header if header is not None else SendMessageRequestHeader.from_ext_fields(fields)


def _read(
    header_type: type[SendMessageRequestHeader], keys: tuple[str, ...], fields: Mapping[str, object]
) -> SendMessageRequestHeader | None:
    """The header when every field is written plainly (see the module docstring), else None."""
    producer_group = fields.get(keys[0])
    topic = fields.get(keys[1])
    default_topic = fields.get(keys[2])
    if type(producer_group) is not str or type(topic) is not str or type(default_topic) is not str:
        return None
    default_topic_queue_nums = fields.get(keys[3])
    queue_id = fields.get(keys[4])
    sys_flag = fields.get(keys[5])
    born_timestamp = fields.get(keys[6])
    flag = fields.get(keys[7])
    if not (
        _is_number(default_topic_queue_nums)
        and _is_number(queue_id)
        and _is_number(sys_flag)
        and _is_number(born_timestamp)
        and _is_number(flag)
    ):
        return None
    properties = fields.get(keys[8])
    reconsume_times = fields.get(keys[9])
    unit_mode = fields.get(keys[10])
    batch = fields.get(keys[11])
    max_reconsume_times = fields.get(keys[12])
    if (
        (properties is not None and type(properties) is not str)
        or (reconsume_times is not None and not _is_number(reconsume_times))
        or (max_reconsume_times is not None and not _is_number(max_reconsume_times))
        or (unit_mode is not None and not _is_boolean(unit_mode))
        or (batch is not None and not _is_boolean(batch))
    ):
        return None
    return header_type(
        producer_group=producer_group,
        topic=topic,
        default_topic=default_topic,
        default_topic_queue_nums=int(str(default_topic_queue_nums)),
        queue_id=int(str(queue_id)),
        sys_flag=int(str(sys_flag)),
        born_timestamp=int(str(born_timestamp)),
        flag=int(str(flag)),
        properties=None if properties is None else str(properties),
        reconsume_times=None if reconsume_times is None else int(str(reconsume_times)),
        unit_mode=unit_mode is not None and unit_mode in _TRUE,
        batch=batch is not None and batch in _TRUE,
        max_reconsume_times=None if max_reconsume_times is None else int(str(max_reconsume_times)),
    )


_TRUE: Final = frozenset({"true", "1"})
_BOOLEANS: Final = frozenset({"true", "1", "false", "0"})


def _is_boolean(value: object) -> bool:
    return type(value) is str and value in _BOOLEANS


def _is_number(value: object) -> bool:
    """True for a string of decimal digits as clients write numbers (see the module docstring)."""
    if type(value) is not str:
        return False
    text = value
    size = len(text)
    start = 1 if size > 1 and text[0] == "-" else 0
    digits = size - start
    if digits == 0 or digits > _MAX_DIGITS or not text.isascii():
        return False
    if text[start] == "0":
        return size == 1  # "0" itself; "-0" and "007" go to the generic reader
    return (text[1:] if start else text).isdigit()
