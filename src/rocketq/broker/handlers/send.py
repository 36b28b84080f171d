"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) (SendMessageProcessor).

Batches arrive as code 320 (Java), or as 10/310 with ``batch``/``m`` set to true or "1" (C++ clients);
both are decoded. Delayed messages (DELAY > 0) are stored in SCHEDULE_TOPIC_XXXX, queue level-1, with
their real topic and queue in properties; the schedule service delivers them when due. Transactional
half messages (``TRAN_MSG=true``; for a rocketq transactional batch, in the header's properties) are
stored in RMQ_SYS_TRANS_HALF_TOPIC queue 0 (``rocketq.broker.transactions``), a transactional batch
as one half message holding the batch.
"""

from __future__ import annotations

import ipaddress
import logging
import random
from collections.abc import Awaitable, Coroutine
from typing import TYPE_CHECKING, Any, Final

import msgspec

from rocketq.broker.context import BrokerContext, reply
from rocketq.broker.message_put import (
    STORED,
    dead_letter_topic,
    put_one_now,
    put_or_wait,
    redirect_delayed,
    response_code,
)
from rocketq.broker.retry import V3_4_9
from rocketq.broker.send_request import DEFAULT_REGION, TRACE_ON, SendTopics, send_header
from rocketq.broker.topic_config import is_writeable, topic_name_problem_in_cluster
from rocketq.broker.transactions.half import batch_transaction_problem, make_half, transaction_of_batch
from rocketq.common.group_topics import DEFAULT_MAX_RECONSUME_TIMES, RETRY_PREFIX
from rocketq.common.message import (
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    Property,
    decode_properties,
    encode_properties,
    find_property,
)
from rocketq.common.message_id import encode_host, joined_offset_message_ids, offset_hex
from rocketq.common.names import NOT_SENDABLE_TOPICS
from rocketq.common.record import SysFlag
from rocketq.protocol import (
    BatchItem,
    RemoteProtocolError,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SendMessageRequestHeader,
    TopicConfig,
    decode_batch,
)
from rocketq.protocol.command import (
    DEFAULT_VERSION,
    JSON_ANSWER_BEFORE_OPAQUE,
    JSON_HEADER_END,
    RESPONSE_FLAG,
    takes_templated_header,
    templated_response,
)
from rocketq.remoting import Connection, ServerHandler
from rocketq.store import BatchToStore, MessageToStore, PutMessageResult

if TYPE_CHECKING:
    from rocketq.broker.idempotent_sends import IdempotentSends

_header_values: Final = msgspec.structs.astuple
_SEND_HEADER_ORDER: Final = (
    "producer_group", "topic", "default_topic", "default_topic_queue_nums", "queue_id", "sys_flag",
    "born_timestamp", "flag", "properties", "reconsume_times", "unit_mode", "batch", "max_reconsume_times",
    "rq_idempotent",
)  # fmt: skip
"""The send header's fields in the order ``_send`` unpacks them (one ``astuple`` call, not 14 generic
attribute lookups): a field added to or moved in ``SendMessageRequestHeader`` stops the import below
instead of silently shifting the others."""
if SendMessageRequestHeader.__struct_fields__ != _SEND_HEADER_ORDER:
    raise ImportError(f"_send unpacks {_SEND_HEADER_ORDER}, the header is {SendMessageRequestHeader.__struct_fields__}")
log = logging.getLogger(__name__)

# Final: compiled code reads a plain module name (or an imported one) from the module's dict per use
_TRUE: Final = ("true", "1")
_BORN_HOST: Final = "born_host"
_RETRY_PREFIX: Final = RETRY_PREFIX


# Enum members read per request, bound once (see rocketq.native.modules on enum members)
_SEND_BATCH_MESSAGE: Final = RequestCode.SEND_BATCH_MESSAGE
_SUCCESS: Final = ResponseCode.SUCCESS


def born_host_of(connection: Connection) -> bytes:
    """The producer's IPv4 address and port (IPv6 peers are stored as 0.0.0.0: clients read IPv4 only).

    Parsed once per connection and kept in its attributes."""
    cached = connection.attributes.get(_BORN_HOST)
    if isinstance(cached, bytes):
        return cached
    connection.attributes[_BORN_HOST] = born_host = _parse_born_host(connection.remote_address)
    return born_host


def _parse_born_host(remote_address: str) -> bytes:
    host, _, port = remote_address.rpartition(":")
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return bytes(8)
    if isinstance(address, ipaddress.IPv6Address):
        address = address.ipv4_mapped or ipaddress.IPv4Address(0)
    return encode_host(str(address), int(port) if port.isdigit() else 0)


_NEEDS_GENERAL_PATH: Final = tuple(
    name + NAME_VALUE_SEPARATOR
    for name in (
        Property.MSG_REGION,
        Property.TRACE_SWITCH,
        Property.CLUSTER,
        Property.DELAY_TIME_LEVEL,
        Property.TRANSACTION_PREPARED,
    )
)
"""``name<value separator>`` of the properties the broker sets or acts on, looked for as substrings (five
``in`` tests cost a quarter of one search of the same alternatives as a regular expression)."""


def plain_stored_properties(text: str, suffix: str) -> str | None:
    """The properties text a plain message is stored with: the producer's, then the broker's ``suffix``
    (region, trace switch, cluster), by appending instead of decoding and re-encoding. None when the
    text names a property the broker sets or acts on (region, trace, cluster, delay, transaction):
    those take the general path. Decodes to the same properties as the general path."""
    for needle in _NEEDS_GENERAL_PATH:
        if needle in text:
            return None
    text = text.rstrip(PROPERTY_SEPARATOR)
    return f"{text}{PROPERTY_SEPARATOR}{suffix}" if text else suffix


Answer = RemotingCommand | Coroutine[Any, Any, RemotingCommand]
"""A send's answer: the response at once when nothing is waited for (the common ASYNC_FLUSH send: no
coroutine is made), else a coroutine that waits (for the fsync, a slave, a transactional batch)."""


def handlers(context: BrokerContext) -> dict[int, ServerHandler]:
    send_topics = SendTopics(context.topics)
    idempotent_sends = context.idempotent_sends

    def handle_send(
        request: RemotingCommand, connection: Connection
    ) -> Answer | Coroutine[Any, Any, RemotingCommand | None]:
        """A send request straight from its frame: its header read once (the idempotent mark with it, a
        field of the header: ``rq_idempotent``); a send marked idempotent goes through the broker's
        idempotent window (``IdempotentSends.send_once``, which stores it through ``_send``), any other
        to ``_send`` at once."""
        try:
            header = send_header(request)
        except RemoteProtocolError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        if idempotent_sends is not None and idempotent_sends.marks(header):
            return _send_once(context, idempotent_sends, request, connection, header, send_topics)
        return _send(context, request, connection, header, send_topics)

    return {
        RequestCode.SEND_MESSAGE: handle_send,
        RequestCode.SEND_MESSAGE_V2: handle_send,
        RequestCode.SEND_BATCH_MESSAGE: handle_send,
    }


def _send_once(
    context: BrokerContext,
    idempotent_sends: IdempotentSends,
    request: RemotingCommand,
    connection: Connection,
    header: SendMessageRequestHeader,
    send_topics: SendTopics,
) -> Coroutine[Any, Any, RemotingCommand | None]:
    """A marked send through the idempotent window, stored (when no repeat) with the header read."""

    def store(request: RemotingCommand, connection: Connection) -> Answer:
        return _send(context, request, connection, header, send_topics)

    return idempotent_sends.send_once(store, request, connection, header)


def _sendable_topic(
    context: BrokerContext, request: RemotingCommand, header: SendMessageRequestHeader, topic: str, cluster_name: str
) -> TopicConfig | RemotingCommand:
    """The config of the send's topic (made when a retry topic, or an unknown one with auto-creation on,
    is missing), or the refusal when it is no valid name, one of the broker's own, unknown or not
    writable (``SendTopics`` remembers the topics that pass)."""
    problem = topic_name_problem_in_cluster(topic, cluster_name)
    if problem:
        return reply(request, ResponseCode.SYSTEM_ERROR, problem)
    if topic in NOT_SENDABLE_TOPICS:  # the broker's own: a message there would be read as one of its
        return reply(request, ResponseCode.NO_PERMISSION, f"sending to topic {topic} is forbidden")
    topic_config = context.topics.get(topic)
    if topic_config is None:
        if topic.startswith(RETRY_PREFIX):
            group_config = context.groups.find(topic[len(RETRY_PREFIX) :])
            queues = group_config.retry_queue_nums if group_config else 1
            topic_config, _ = context.topics.create_system_topic(topic, max(1, queues))
        elif context.config.auto_create_topic_enable:
            topic_config = context.topics.create_in_send(topic, header.default_topic, header.default_topic_queue_nums)
        if topic_config is None:
            return reply(request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
        context.request_registration()
    if not is_writeable(topic_config.perm):
        return reply(request, ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden")
    return topic_config


def _send(
    context: BrokerContext,
    request: RemotingCommand,
    connection: Connection,
    header: SendMessageRequestHeader,
    send_topics: SendTopics,
) -> Answer:
    # the header's fields in one call, in _SEND_HEADER_ORDER (checked against the header at import)
    (
        _, topic, _, _, queue_id, sys_flag, born_timestamp, flag, header_properties, reconsume, _, batch_header,
        max_reconsume, _,
    ) = _header_values(header)  # fmt: skip
    config = context.config
    if not context.is_master:
        return reply(request, ResponseCode.SERVICE_NOT_AVAILABLE, f"broker {config.broker_name} is a slave")
    cluster_name = config.broker_cluster_name
    topic_config = send_topics.get(topic, cluster_name)
    if topic_config is None:
        checked = _sendable_topic(context, request, header, topic, cluster_name)
        if isinstance(checked, RemotingCommand):
            return checked
        topic_config = checked
        send_topics.remember(topic, topic_config, cluster_name)
    if queue_id < 0:
        queue_id = random.randrange(topic_config.write_queue_nums)
    if queue_id >= max(topic_config.read_queue_nums, topic_config.write_queue_nums):
        return reply(request, ResponseCode.SYSTEM_ERROR, f"queueId[{queue_id}] is illegal, topic {topic_config}")

    reconsume_times = reconsume or 0
    dead_letter = False
    if topic.startswith(_RETRY_PREFIX):
        group = topic[len(_RETRY_PREFIX) :]
        group_config = context.groups.find(group)
        max_times = group_config.retry_max_times if group_config else DEFAULT_MAX_RECONSUME_TIMES
        if request.version >= V3_4_9 and max_reconsume is not None:
            max_times = max_reconsume
        if reconsume_times >= max_times:
            topic = dead_letter_topic(context, group).topic_name
            queue_id, dead_letter = 0, True
            log.info("message of group %s reached %d retries: stored in %s", group, reconsume_times, topic)

    is_batch = request.code == _SEND_BATCH_MESSAGE or batch_header
    received = request.body
    body = received if isinstance(received, bytes) else bytes(received)  # (a frame's body is bytes already)
    plain_suffix = send_topics.properties_suffix  # (the cluster's: send_topics.get read its name)
    if not (is_batch or dead_letter):  # one message: the path of a plain one that waits for nothing
        properties_text = header_properties or ""
        plain = plain_stored_properties(properties_text, plain_suffix)
        if plain is not None and len(body) <= config.max_message_size and not _waits(context, properties_text):
            result = put_one_now(
                context, topic, queue_id, body, plain, flag, sys_flag, born_timestamp,
                born_host_of(connection), reconsume_times,
            )  # fmt: skip
            return _response(context, request, result, topic, queue_id)
    stored_sys_flag = sys_flag & ~SysFlag.INNER_BATCH if is_batch else sys_flag
    # a transactional batch (rocketq): its header's properties say so and name its transaction group
    transaction = transaction_of_batch(header_properties) if is_batch and header_properties else None
    if transaction is not None:
        refusal = batch_transaction_problem(transaction, dead_letter, config.reject_transaction_message)
        if refusal is None and context.transactions is not None:
            storing = context.transactions.store_batch(
                topic, queue_id, body, transaction, broker_suffix=plain_suffix, sys_flag=stored_sys_flag,
                born_timestamp=born_timestamp, born_host=born_host_of(connection),
                reconsume_times=reconsume_times,
            )  # fmt: skip
            return _transaction_stored(context, request, storing, topic, queue_id)
        return reply(request, *(refusal or (ResponseCode.SYSTEM_ERROR, "transactions are not running")))
    if is_batch and not dead_letter:  # the common batch: written from its wire body, no decoding
        batch = BatchToStore(
            topic=topic, queue_id=queue_id, items=body, properties_suffix=plain_suffix, sys_flag=stored_sys_flag,
            born_timestamp=born_timestamp, born_host=born_host_of(connection), store_host=context.store_host,
            reconsume_times=reconsume_times,
        )  # fmt: skip
        measured = context.store.measure_batch(batch, max_body_size=config.max_message_size)
        if measured is not None:
            outcome = put_or_wait(context, measured, wait_for_flush=measured.wait_for_flush)
            if isinstance(outcome, PutMessageResult):
                return _response(context, request, outcome, topic, queue_id)
            return _stored(context, request, outcome, None, topic, queue_id)
    try:
        items = decode_batch(body) if is_batch else None
    except RemoteProtocolError as exc:
        return reply(request, ResponseCode.MESSAGE_ILLEGAL, f"bad batch body: {exc}")
    # (a single message as a plain tuple: a NamedTuple's constructor runs interpreted)
    bodies: list[BatchItem] | list[tuple[bytes, str, int]] = (
        items if items is not None else [(body, header_properties or "", flag)]
    )
    if not bodies:
        return reply(request, ResponseCode.MESSAGE_ILLEGAL, "empty batch")
    for message_body, _, _ in bodies:
        if len(message_body) > config.max_message_size:
            return reply(
                request,
                ResponseCode.MESSAGE_ILLEGAL,
                f"the message body size {len(message_body)} exceeds the maximum {config.max_message_size}",
            )

    born_host = born_host_of(connection)
    level_count = -1  # (how many delay levels: read when a message names properties the broker acts on)
    store_host = context.store_host
    messages: list[MessageToStore] = []
    wait_for_flush = False
    half_properties: str | None = None  # a half message's (the last one's, for a batch)
    for message_body, properties_text, flag in bodies:
        target_topic, target_queue, message_sys_flag = topic, queue_id, stored_sys_flag
        stored = None if dead_letter else plain_stored_properties(properties_text, plain_suffix)
        if stored is not None:  # the common case: append the broker's properties to the text
            wait_for_flush = wait_for_flush or _waits(context, properties_text)
        else:
            properties = decode_properties(properties_text)
            half = properties.get(Property.TRANSACTION_PREPARED) == "true" and not dead_letter
            if half and config.reject_transaction_message:
                return reply(
                    request,
                    ResponseCode.NO_PERMISSION,
                    f"the broker[{config.broker_name}] rejects transactional messages",
                )
            if half and is_batch:
                return reply(
                    request, ResponseCode.MESSAGE_ILLEGAL, "a transactional message in a batch that is not one"
                )
            wait_for_flush = wait_for_flush or properties.get(Property.WAIT_STORE_MSG_OK, "true").lower() in _TRUE
            properties.setdefault(Property.MSG_REGION, DEFAULT_REGION)
            properties.setdefault(Property.TRACE_SWITCH, TRACE_ON)
            properties[Property.CLUSTER] = config.broker_cluster_name
            if dead_letter:  # dead letters are stored at once, never delayed
                properties.pop(Property.DELAY_TIME_LEVEL, None)
            if half:  # stored in the half topic until its transaction ends
                target_topic, target_queue = make_half(properties, topic, queue_id)
                message_sys_flag = stored_sys_flag & ~SysFlag.TRANSACTION_MASK
            else:
                if level_count < 0:
                    level_count = len(context.store.config.delay_levels_ms())
                target_topic, target_queue = redirect_delayed(properties, topic, queue_id, sys_flag, level_count)
            stored = encode_properties(properties)
            if half:
                half_properties = stored
        messages.append(
            MessageToStore(
                topic=target_topic,
                queue_id=target_queue,
                body=message_body,
                properties=stored,
                flag=flag,
                sys_flag=message_sys_flag,
                born_timestamp=born_timestamp,
                born_host=born_host,
                store_host=store_host,
                reconsume_times=reconsume_times,
            )
        )

    outcome = put_or_wait(context, messages, wait_for_flush=wait_for_flush)
    if isinstance(outcome, PutMessageResult):
        return _answer_put(context, request, outcome, half_properties, topic, queue_id)
    return _stored(context, request, outcome, half_properties, topic, queue_id)


def _waits(context: BrokerContext, properties_text: str) -> bool:
    """Whether the put of a plain message with these properties waits (for its fsync or a slave):
    when the broker has something to wait for and the producer waits (WAIT true, or not said)."""
    if not context.flush_waits.active:
        return False
    wait = find_property(properties_text, Property.WAIT_STORE_MSG_OK)
    return wait is None or wait.lower() in _TRUE


async def _stored(
    context: BrokerContext,
    request: RemotingCommand,
    waiting: Awaitable[PutMessageResult],
    half_properties: str | None,
    topic: str,
    queue_id: int,
) -> RemotingCommand:
    """The answer of a put that waits (for its fsync or its slave)."""
    return _answer_put(context, request, await waiting, half_properties, topic, queue_id)


async def _transaction_stored(
    context: BrokerContext,
    request: RemotingCommand,
    storing: Awaitable[PutMessageResult | tuple[int, str]],
    topic: str,
    queue_id: int,
) -> RemotingCommand:
    """The answer of a transactional batch: stored as one half message, or refused."""
    stored_batch = await storing
    if isinstance(stored_batch, PutMessageResult):
        return _response(context, request, stored_batch, topic, queue_id)
    return reply(request, *stored_batch)


def _answer_put(
    context: BrokerContext,
    request: RemotingCommand,
    result: PutMessageResult,
    half_properties: str | None,
    topic: str,
    queue_id: int,
) -> RemotingCommand:
    if half_properties is not None and context.transactions is not None:
        context.transactions.half_stored(result, half_properties)
    return _response(context, request, result, topic, queue_id)


def _response(
    context: BrokerContext, request: RemotingCommand, result: PutMessageResult, topic: str, queue_id: int
) -> RemotingCommand:
    code = response_code(result.status)
    if result.status not in STORED:
        return reply(request, code, result.remark or result.status.value)
    physical_offsets = result.physical_offsets
    context.put_traffic.record(topic, len(physical_offsets), result.wrote_bytes)  # once per request
    if code == _SUCCESS and len(physical_offsets) == 1 and takes_templated_header(request):
        return one_stored_answer(request, context.store_host, physical_offsets[0], queue_id, result.queue_offsets[0])
    message_ids = joined_offset_message_ids(context.store_host, physical_offsets)
    return send_answer(request, code, message_ids, queue_id, result.queue_offsets[0])


# The JSON header of a stored send's SUCCESS answer, around its four varying values, as
# ``encode_json_header`` writes it (keys in its order, extFields in ``send_answer``'s order, no remark)
_ANSWER_HEAD: Final = f'{{"code":{int(ResponseCode.SUCCESS)},"extFields":{{"msgId":"'
_AFTER_MESSAGE_IDS: Final = '","queueId":"'
_AFTER_QUEUE_ID: Final = '","queueOffset":"'
_AFTER_FIELDS: Final = f'","{Property.MSG_REGION}":"{DEFAULT_REGION}","{Property.TRACE_SWITCH}":"{TRACE_ON}"}}'
_AFTER_QUEUE_OFFSET: Final = _AFTER_FIELDS + JSON_ANSWER_BEFORE_OPAQUE
_CODE_HEAD: Final = f'{{"code":{int(ResponseCode.SUCCESS)},"extFields":'


def send_answer(
    request: RemotingCommand, code: int, message_ids: str, queue_id: int, queue_offset: int
) -> RemotingCommand:
    """The answer to a send whose messages were stored: ``make_response(request, code, ext_fields=...)``
    with SendMessageResponseHeader's fields (msgId: the offset ids, comma-joined for a batch; queueId;
    queueOffset of the first message) and the region and trace switch. The SUCCESS answer to a JSON
    request carries its header already encoded (``RemotingCommand.encoded_header``), written from a
    template instead of through a dict and the generic encoder: ``message_ids`` are hex digits and
    commas and the other values numbers, so nothing in it needs escaping
    (``tests/broker/test_send_answer.py`` holds it equal to ``encode_header``'s)."""
    queue_id_text, queue_offset_text = str(queue_id), str(queue_offset)  # (each number made text once)
    fields = {
        "msgId": message_ids,
        "queueId": queue_id_text,
        "queueOffset": queue_offset_text,
        Property.MSG_REGION: DEFAULT_REGION,
        Property.TRACE_SWITCH: TRACE_ON,
    }
    encoded: bytes | None = None
    if code == _SUCCESS and takes_templated_header(request):
        encoded = (
            f"{_ANSWER_HEAD}{message_ids}{_AFTER_MESSAGE_IDS}{queue_id_text}{_AFTER_QUEUE_ID}{queue_offset_text}"
            f"{_AFTER_QUEUE_OFFSET}{request.opaque}{JSON_HEADER_END}"
        ).encode()
    return templated_response(request, code, fields, encoded)


_IDS_KEPT: Final = 64  # hosts and queue ids whose text is kept (a broker answers for one host, few queues)
_ID_HEADS: Final[dict[bytes, str]] = {}
"""Store host -> the answer's extFields text up to the host's hex: ``{"msgId":"<host hex>``."""
_QUEUE_ID_TEXTS: Final[dict[int, str]] = {}
"""Queue id -> the extFields text between the message id and the queue offset."""


def one_stored_answer(
    request: RemotingCommand, store_host: bytes, physical_offset: int, queue_id: int, queue_offset: int
) -> RemotingCommand:
    """``send_answer(request, SUCCESS, <the record's offset message id>, queue_id, queue_offset)`` of a
    send that stored one message at ``physical_offset`` (>= 0), for a request that
    ``takes_templated_header``: the answer's extFields text made from what is fixed for its host and
    queue (kept per host and per queue id) and the three values that vary (the offset's hex, the
    queue offset, the opaque); the answer keeps that text (``ext_json``: a dict only if something
    reads ``ext_fields``) and its header is that text inside the fixed rest of the header.
    ``tests/broker/test_send_answer.py`` holds it equal to ``send_answer``'s answer and frame."""
    head = _ID_HEADS.get(store_host)
    if head is None:
        head = _kept(_ID_HEADS, store_host, '{"msgId":"' + store_host.hex().upper())
    between = _QUEUE_ID_TEXTS.get(queue_id)
    if between is None:
        between = _kept(_QUEUE_ID_TEXTS, queue_id, f"{_AFTER_MESSAGE_IDS}{queue_id}{_AFTER_QUEUE_ID}")
    ext = f"{head}{offset_hex(physical_offset)}{between}{queue_offset}{_AFTER_FIELDS}"
    opaque = request.opaque
    return RemotingCommand(
        code=_SUCCESS,
        opaque=opaque,
        flag=RESPONSE_FLAG,
        version=DEFAULT_VERSION,
        ext_json=ext,
        serialize_type=request.serialize_type,
        encoded_header=f"{_CODE_HEAD}{ext}{JSON_ANSWER_BEFORE_OPAQUE}{opaque}{JSON_HEADER_END}".encode(),
    )


def _kept(texts: dict[Any, str], key: object, text: str) -> str:
    """``text`` kept in ``texts`` under ``key`` (at most ``_IDS_KEPT``; then they start over)."""
    if len(texts) >= _IDS_KEPT:
        texts.clear()
    texts[key] = text
    return text
