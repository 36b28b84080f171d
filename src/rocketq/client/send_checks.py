"""The checks a message passes before a producer sends it (nothing is sent when one fails), its
properties as they travel, and the send request that carries it. ``ValidationError`` says what is
wrong."""

from __future__ import annotations

import time
import zlib
from collections.abc import Sequence
from typing import Final, final

from librt.strings import BytesWriter

from rocketq.client.config import ProducerConfig
from rocketq.client.errors import ValidationError
from rocketq.client.message import Message, MessageQueue
from rocketq.client.unique_id import UniqueIdGenerator
from rocketq.common.message import (
    KEY_SEPARATOR,
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    Property,
    encode_properties,
)
from rocketq.common.names import NOT_SENDABLE_TOPICS, empty_property_problem, separator_problem, topic_name_problem
from rocketq.common.record import SysFlag
from rocketq.protocol import ONEWAY_FLAG, RemotingCommand, RequestCode
from rocketq.protocol.batch import write_item
from rocketq.protocol.headers import IDEMPOTENT_SEND_FIELD
from rocketq.protocol.request_templates import TEXTS_KEPT, send_header_rest, send_header_start
from rocketq.remoting.connection import next_opaque


def checked_properties(message: Message, max_message_size: int, valid_topics: set[str]) -> dict[str, str]:
    """``message``'s properties as they travel, once its topic, body and properties passed the checks
    (``valid_topics``: topics already checked, which this adds to: a regular expression per topic, not
    per message). ``properties_text`` makes the last check."""
    check_topic_and_body(message, max_message_size, valid_topics)
    problem = empty_property_problem(message.properties)
    if problem is not None:
        raise ValidationError(problem)
    return message.wire_properties()


def check_topic_and_body(message: Message, max_message_size: int, valid_topics: set[str]) -> None:
    """ValidationError unless ``message``'s topic may be sent to and its body is neither empty nor too
    large (``valid_topics`` as for ``checked_properties``)."""
    topic = message.topic
    if topic not in valid_topics:
        problem = topic_name_problem(topic)
        if problem is None and topic in NOT_SENDABLE_TOPICS:
            problem = f"the topic {topic!r} is written by the broker only"
        if problem is not None:
            raise ValidationError(problem)
        valid_topics.add(topic)
    if not message.body:
        raise ValidationError("the message body is empty")
    if len(message.body) > max_message_size:
        raise ValidationError(f"the message body of {len(message.body)} bytes exceeds the maximum {max_message_size}")


def properties_text(properties: dict[str, str]) -> str:
    """``properties`` encoded, or ValidationError when a name or value holds a separator."""
    text = encode_properties(properties)
    problem = separator_problem(properties, text)
    if problem is not None:
        raise ValidationError(problem)
    return text


def checked_text(
    message: Message,
    max_message_size: int,
    valid_topics: set[str],
    fresh_id: str,
    extra: dict[str, str] | None = None,
) -> tuple[str, str]:
    """``message`` checked (ValidationError when it cannot travel; ``valid_topics`` as for
    ``checked_properties``): its properties text as it travels and its unique id, its own UNIQ_KEY
    property or else ``fresh_id``, which is then added to the properties last. ``extra``: properties the
    client adds (a transaction's).

    The properties are those of ``checked_properties`` plus ``extra`` and the unique id, encoded by
    ``properties_text``. Without ``extra`` (most sends), a message whose user properties use none of the
    names the client sets itself has its text written out directly, without that dictionary: its user
    properties in their order, then the client's; ``tests/client/test_properties_text.py`` holds the two
    equal."""
    if extra is None:
        check_topic_and_body(message, max_message_size, valid_topics)
        user = message.properties
        user_text = _user_text(user) if user else ""
        text = None if user_text is None else _plain_text(message, fresh_id, user_text)
        if text is not None:
            return text, fresh_id
    properties = checked_properties(message, max_message_size, valid_topics)
    if extra is not None:
        properties.update(extra)
    unique_id = properties.setdefault(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, fresh_id)
    return properties_text(properties), unique_id


_DECIMALS: Final = tuple(str(number) for number in range(1024))
"""The decimal text of 0-1023, made once: a send request has four such fields (queue numbers, flags)."""


_SEND_CODE: Final = int(RequestCode.SEND_MESSAGE_V2)
_BATCH_CODE: Final = int(RequestCode.SEND_BATCH_MESSAGE)
"""The send requests' codes as plain ints (compiled, a read of an ``IntEnum`` member is a generic
attribute lookup on its class, about 900 instructions)."""
_wall_clock: Final = time.time
"""The wall clock, bound once (compiled, ``time.time()`` looks the attribute up on the module first)."""


_SINGLE_TAIL: Final = ("0", "false", "false")
_BATCH_TAIL: Final = ("0", "false", "true")
"""A send request's last three fields (reconsume times, unit mode, batch), made once."""


def decimal_text(number: int) -> str:
    """``str(number)``, from a table for the usual small ones (queue ids, flags, counts)."""
    return _DECIMALS[number] if 0 <= number < 1024 else str(number)


@final
class SendSettings:
    """The settings of a ``ProducerConfig`` that every send reads, read once when the producer is made
    (the config is a frozen dataclass). Compiled, this is a native object: each read is a field load,
    where a read of the config's own attribute is a generic attribute lookup (a dozen per send)."""

    def __init__(self, config: ProducerConfig) -> None:
        self.group = config.group
        self.create_topic_key = config.create_topic_key
        self.queue_nums = decimal_text(config.default_topic_queue_nums)
        self.send_msg_timeout_s = config.send_msg_timeout_s
        self.send_attempt_timeout_s = config.send_attempt_timeout_s
        self.retries = config.retry_times_when_send_failed
        self.async_retries = config.retry_times_when_send_async_failed
        self.idempotent = config.idempotent
        self.compress_over = config.compress_msg_body_over_howmuch
        self.compress_level = config.compress_level
        self.max_message_size = config.max_message_size
        self.latency_fault = config.send_latency_fault_enable
        self._header_starts: dict[str, str] = {}  # by topic, of SEND_MESSAGE_V2 (see header_start)
        self._batch_header_starts: dict[str, str] = {}  # of SEND_BATCH_MESSAGE

    def header_start(self, code: int, topic: str) -> str:
        """The start of the header of this producer's send requests with ``code`` to ``topic``
        (``request_templates.send_header_start``: what they share), written once per topic (for
        ``TEXTS_KEPT`` topics at most)."""
        starts = self._header_starts if code == _SEND_CODE else self._batch_header_starts
        start = starts.get(topic)
        if start is None:
            start = send_header_start(code, self.group, topic, self.create_topic_key, self.queue_nums)
            if len(starts) < TEXTS_KEPT:
                starts[topic] = start
        return start


def prepared_message(
    message: Message,
    settings: SendSettings,
    unique_ids: UniqueIdGenerator,
    valid_topics: set[str],
    idempotent: bool = False,
    extra: dict[str, str] | None = None,
    now_ms: int | None = None,
) -> tuple[bytes, str, int, str]:
    """(body, properties text, sys_flag, unique id) of ``message`` as a producer with ``settings`` sends
    it (checked by ``checked_text``; ``extra``: properties the client adds, a transaction's; ``now_ms``:
    the wall clock in ms when the caller has read it). An idempotent send keeps its unique id in
    ``message.properties``: a later send of the same message is a repeat of it. Bodies over the
    settings' threshold are compressed when that makes them smaller."""
    if now_ms is None:
        now_ms = int(_wall_clock() * 1000)
    fresh_id = unique_ids.next_id(now_ms)
    text, unique_id = checked_text(message, settings.max_message_size, valid_topics, fresh_id, extra)
    if idempotent:
        message.properties[Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = unique_id
    body, sys_flag = message.body, 0
    prepared = message.properties.get(Property.TRANSACTION_PREPARED)
    if extra is not None:
        prepared = extra.get(Property.TRANSACTION_PREPARED, prepared)
    if prepared == "true":  # a half message, as Java marks it
        sys_flag = SysFlag.TRANSACTION_PREPARED_TYPE
    if len(body) > settings.compress_over:
        compressed = zlib.compress(body, settings.compress_level)
        if len(compressed) < len(body):
            body, sys_flag = compressed, sys_flag | SysFlag.COMPRESSED
    return body, text, sys_flag, unique_id


_TAGS_ENTRY = Property.TAGS + NAME_VALUE_SEPARATOR
_KEYS_ENTRY = Property.KEYS + NAME_VALUE_SEPARATOR
_DELAY_ENTRY = Property.DELAY_TIME_LEVEL + NAME_VALUE_SEPARATOR
_UNIQUE_ID_ENTRY = PROPERTY_SEPARATOR + Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX + NAME_VALUE_SEPARATOR
_WAIT_TRUE = Property.WAIT_STORE_MSG_OK + NAME_VALUE_SEPARATOR + "true" + _UNIQUE_ID_ENTRY
_WAIT_FALSE = Property.WAIT_STORE_MSG_OK + NAME_VALUE_SEPARATOR + "false" + _UNIQUE_ID_ENTRY


_CLIENT_NAMES: Final = frozenset(
    {
        Property.TAGS,
        Property.KEYS,
        Property.DELAY_TIME_LEVEL,
        Property.WAIT_STORE_MSG_OK,
        Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    }
)
"""The properties ``Message.wire_properties`` and ``checked_text`` set from a message's own fields."""


def _user_text(properties: dict[str, str]) -> str | None:
    """``properties``' entries as they start the properties text (each followed by the property
    separator), or None when one is empty, holds a separator or is a name the client sets itself (the
    dictionary's path then places it, or says what is wrong)."""
    text = ""
    for name, value in properties.items():
        if not name or not value or name in _CLIENT_NAMES or _has_separator(name) or _has_separator(value):
            return None
        text = f"{text}{name}{NAME_VALUE_SEPARATOR}{value}{PROPERTY_SEPARATOR}"  # (one string built, not four)
    return text


def _has_separator(value: str) -> bool:
    return NAME_VALUE_SEPARATOR in value or PROPERTY_SEPARATOR in value


def _plain_text(message: Message, unique_id: str, user_text: str) -> str | None:
    """The properties text: ``user_text`` (``_user_text``), then ``message``'s own fields (tags, keys,
    delay, wait) with ``unique_id``, as ``Message.wire_properties`` orders them after the user properties
    (UNIQ_KEY last); or None when a tag, key or the id is empty or holds a separator: the dictionary's
    path then says what is wrong. (The user text starts it: no concatenation after.)"""
    if not unique_id or _has_separator(unique_id):
        return None
    text = user_text
    tags = message.tags
    if tags:
        if _has_separator(tags):
            return None
        text = f"{text}{_TAGS_ENTRY}{tags}{PROPERTY_SEPARATOR}"
    keys = message.keys
    if keys:
        joined = keys if isinstance(keys, str) else KEY_SEPARATOR.join(keys)
        if not joined or _has_separator(joined):
            return None
        text = f"{text}{_KEYS_ENTRY}{joined}{PROPERTY_SEPARATOR}"
    if message.delay_level > 0:
        text = f"{text}{_DELAY_ENTRY}{message.delay_level}{PROPERTY_SEPARATOR}"
    return f"{text}{_WAIT_TRUE if message.wait_store_msg_ok else _WAIT_FALSE}{unique_id}"


def batch_body(
    messages: Sequence[Message],
    unique_ids: UniqueIdGenerator,
    max_message_size: int,
    valid_topics: set[str],
    idempotent: bool = False,
) -> tuple[bytes, list[str]]:
    """The request body of ``send_batch(messages)`` and its messages' unique ids, new ones from
    ``unique_ids`` for messages without their own (ValidationError when it is not a valid batch: empty,
    several topics, delayed messages, a message that cannot travel, too large; ``valid_topics`` as for
    ``checked_properties``). Idempotent, each message keeps its unique id in ``message.properties``."""
    if not messages:
        raise ValidationError("empty batch")
    topics = {m.topic for m in messages}
    if len(topics) != 1:
        raise ValidationError(f"a batch must have one topic, not {sorted(topics)}")
    if any(m.delay_level > 0 for m in messages):
        raise ValidationError("a batch cannot carry delayed messages")
    out = BytesWriter()
    ids: list[str] = []
    fresh_ids = unique_ids.next_ids(len(messages), int(_wall_clock() * 1000))
    for message, fresh_id in zip(messages, fresh_ids, strict=True):
        text, unique_id = checked_text(message, max_message_size, valid_topics, fresh_id)
        if idempotent:
            message.properties[Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = unique_id
        ids.append(unique_id)
        write_item(out, message.body, text, message.flag)
    body = out.getvalue()
    if len(body) > max_message_size:
        raise ValidationError(f"the batch of {len(body)} bytes exceeds the maximum {max_message_size}")
    return body, ids


def send_request(
    settings: SendSettings,
    queue: MessageQueue,
    body: bytes,
    properties: str,
    sys_flag: int,
    flag: int,
    *,
    batch: bool = False,
    oneway: bool = False,
    idempotent: bool = False,
    born_ms: int | None = None,
) -> RemotingCommand:
    """The SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE) request of a producer with ``settings`` for ``body``
    to ``queue``, born at ``born_ms`` (ms since the epoch), or now."""
    # SendMessageRequestHeaderV2's fields (keys a..m) are written once, in the header's JSON text (from
    # templates: rocketq.protocol.request_templates); the request's ``ext_fields`` dict is made from that
    # text only when something reads it (a signer, ``==``): ``header_json``, as a received command keeps
    # it (the extFields are not cut out of the header for a read that seldom comes: a search of the
    # header's end and a copy per send). tests/client/test_written_headers.py holds that dict equal to the
    # header's own to_ext_fields.
    topic = queue.topic
    queue_id = decimal_text(queue.queue_id)
    sys_flag_text, flag_text = decimal_text(sys_flag), decimal_text(flag)
    born = str(int(_wall_clock() * 1000) if born_ms is None else born_ms)
    code = _BATCH_CODE if batch else _SEND_CODE
    opaque = next_opaque()
    # its start (group, topic, ...) written once per topic
    header = send_header_rest(
        settings.header_start(code, topic),
        opaque,
        oneway,
        queue_id,
        sys_flag_text,
        born,
        flag_text,
        properties,
        _BATCH_TAIL if batch else _SINGLE_TAIL,
        IDEMPOTENT_SEND_FIELD if idempotent else None,
    )
    flags = ONEWAY_FLAG if oneway else 0
    return RemotingCommand(code=code, opaque=opaque, flag=flags, body=body, encoded_header=header, header_json=header)


@final
class PreparedSend:
    """A message prepared once (``prepared_message``: checked, given its unique id, compressed when
    large) to travel alone: its request to a given queue (``request``, for each attempt) and its unique
    id. ``marked``: an idempotent send. The first request is born when the message was prepared
    (``born_ms``: one wall-clock read for both), a retry when it is made."""

    def __init__(
        self,
        settings: SendSettings,
        prepared: tuple[bytes, str, int, str],
        flag: int,
        marked: bool,
        born_ms: int,
    ) -> None:
        self.settings = settings
        self.body, self.properties, self.sys_flag, self.unique_id = prepared
        self.flag = flag
        self.marked = marked
        self.born_ms: int | None = born_ms

    def request(self, queue: MessageQueue) -> RemotingCommand:
        """The send request of the message to ``queue`` (``send_request``)."""
        born_ms = self.born_ms
        self.born_ms = None
        return send_request(
            self.settings,
            queue,
            self.body,
            self.properties,
            self.sys_flag,
            self.flag,
            idempotent=self.marked,
            born_ms=born_ms,
        )
