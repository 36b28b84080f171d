"""PULL_MESSAGE (11) with long polling (PullMessageProcessor + PullRequestHoldService).

A pull that finds nothing new, from a client that allows suspension, is held until a message arrives
on its queue or its suspend timeout ends, then runs once more without suspension.

The answer's ``suggestWhichBrokerId`` tells the consumer which broker of the group to pull this queue
from next (``suggest_broker_id``; docs/replication.md#reads-from-slaves).

The answer's records are written from the CommitLog's mapped files to the socket, view by view, without
being joined into one ``bytes`` first (``records_to_write``), unless they are many small pieces; its
header comes from a template (``rocketq.broker.pull_frames``). The checks that depend only on the pull's
(group, topic, queue) and subscription are made once per such site while nothing they read changes
(``rocketq.broker.pull_sites``).

A SQL92 pull is filtered by the expression it carries (subscription flag set, as rocketq's clients
and groupless readers send it) or else by its group's registered one; see ``rocketq.broker.sql_filters``.
"""

from __future__ import annotations

import logging
import os
from typing import Final

from rocketq.broker.config import BrokerConfig
from rocketq.broker.context import BrokerContext, reply
from rocketq.broker.long_polling import Hold
from rocketq.broker.pull_frames import (
    IN_PLACE_VIEW_BYTES,
    MASTER_ID,
    SLAVE_ID,
    answer_frame,
    pull_answer,
    records_to_write,
)
from rocketq.broker.pull_sites import FLAG_SUBSCRIPTION, PullSite, check_pull
from rocketq.protocol import (
    PullMessageRequestHeader,
    RemoteProtocolError,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    ext_header,
)
from rocketq.remoting import Connection, ServerHandler
from rocketq.store import GetStatus
from rocketq.store.message_filter import MessageFilter
from rocketq.store.results import DispatchRequest

log = logging.getLogger(__name__)

FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2

RAM_BYTES = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")

# Enum members read per pull, bound once (see rocketq.native.modules on enum members)
_FOUND: Final = GetStatus.FOUND
_SUCCESS: Final = ResponseCode.SUCCESS
_PULL_NOT_FOUND: Final = ResponseCode.PULL_NOT_FOUND
_PULL_OFFSET_MOVED: Final = ResponseCode.PULL_OFFSET_MOVED


def suggest_broker_id(
    *,
    is_slave: bool,
    own_id: int,
    slave_read_enable: bool,
    slave_available: bool,
    lag_bytes: int,
    in_memory_bytes: int,
) -> int:
    """The ``suggestWhichBrokerId`` of a pull answer.

    A master suggests its slave when one is connected and either ``slaveReadEnable`` is on or the
    consumer is more than ``in_memory_bytes`` (``accessMessageInMemoryMaxRatio`` % of RAM) behind the
    CommitLog's end (``lag_bytes``: the end minus the offset of the last record returned), else itself.
    A slave keeps the consumer (its own id) with ``slaveReadEnable``, else sends it back to the master.
    """
    if is_slave:
        return own_id if slave_read_enable else MASTER_ID
    if slave_available and (slave_read_enable or lag_bytes > in_memory_bytes):
        return SLAVE_ID
    return MASTER_ID


class _ConfigReads:
    """What every pull's answer reads of the broker's config, read once per config: ``BrokerConfig`` is
    a frozen dataclass, replaced when it changes, whose fields and properties (``is_slave``) are generic,
    some interpreted, attribute reads from compiled code."""

    __slots__ = (
        "config",
        "in_memory_bytes",
        "is_slave",
        "long_polling_enable",
        "own_id",
        "short_polling_time_mills",
        "slave_read_enable",
    )

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.is_slave = config.is_slave
        self.own_id = config.broker_id
        self.slave_read_enable = config.slave_read_enable
        self.in_memory_bytes = RAM_BYTES * config.access_message_in_memory_max_ratio // 100
        self.long_polling_enable = config.long_polling_enable
        self.short_polling_time_mills = config.short_polling_time_mills


class BrokerReads:
    """One broker's ``_ConfigReads``, remade when its config is replaced, and its pulls' checked
    ``sites`` (kept by its pull handler: brokers of one process, a test's master and slave, each read
    their own)."""

    __slots__ = ("_context", "_reads", "sites")

    def __init__(self, context: BrokerContext) -> None:
        self._context = context
        self._reads = _ConfigReads(context.config)
        self.sites: dict[tuple[str, str, int], PullSite] = {}
        """The ``PullSite`` of each (group, topic, queue id) pulled with a tag subscription."""

    def current(self) -> _ConfigReads:
        """The reads of the broker's config as it is now."""
        config = self._context.config
        reads = self._reads
        if reads.config is not config:
            reads = self._reads = _ConfigReads(config)
        return reads


def handlers(context: BrokerContext) -> dict[int, ServerHandler]:
    config_reads = BrokerReads(context)

    # A plain function, not a coroutine: a pull never waits (a held one is answered by long polling), so
    # the server takes its answer at once, without a coroutine, a context copy and an eager start.
    def handle_pull(request: RemotingCommand, connection: Connection) -> RemotingCommand | None:
        try:
            header = pull_header(request)
        except RemoteProtocolError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        return pull(context, config_reads, request, header, connection)

    return {RequestCode.PULL_MESSAGE: handle_pull}


def pull_header(request: RemotingCommand) -> PullMessageRequestHeader:
    """``PullMessageRequestHeader.from_ext_fields`` of a pull request, read by ``ext_header`` (straight
    from the JSON text of a request the server received, no dict).

    Raises:
        RemoteProtocolError: The header is invalid.
    """
    return ext_header(request, PullMessageRequestHeader)


def pull(
    context: BrokerContext,
    config_reads: BrokerReads,
    request: RemotingCommand,
    header: PullMessageRequestHeader,
    connection: Connection,
) -> RemotingCommand | None:
    """The response, or None when the pull is held: long polling answers it on ``connection`` later."""
    # header fields read once each (a Struct's attribute is a generic getattr from compiled code)
    group, topic, queue_id, sys_flag = header.consumer_group, header.topic, header.queue_id, header.sys_flag
    group_config = context.groups.find(group)
    topic_config = context.topics.get(topic)
    site = config_reads.sites.get((group, topic, queue_id))
    message_filter: MessageFilter | None = None
    if site is not None and site.holds(context, group_config, topic_config, header, group, topic, sys_flag):
        tags_codes = site.tags_codes
    else:
        checked = check_pull(
            context, config_reads.sites, request, header, group_config, topic_config, group, topic, queue_id, sys_flag
        )
        if isinstance(checked, RemotingCommand):
            return checked
        tags_codes, message_filter = checked

    if sys_flag & FLAG_COMMIT_OFFSET and context.is_master:
        context.offsets.commit(group, topic, queue_id, header.commit_offset)

    # held until a message arrives or the client's suspend timeout; without long polling (longPollingEnable=false)
    # for shortPollingTimeMills, as RocketMQ does
    reads, suspend_ms, offset = config_reads.current(), header.suspend_timeout_millis, header.queue_offset
    hold_ms = suspend_ms if reads.long_polling_enable else reads.short_polling_time_mills
    may_hold = bool(sys_flag & FLAG_SUSPEND) and suspend_ms > 0 and hold_ms > 0
    caught_up = offset == context.store.get_max_offset_in_queue(topic, queue_id) > 0
    if not (may_hold and caught_up):  # (a consumer that caught up is held without reading: the common pull)
        code, suggested, next_offset, low, high, records, count, size = _read(
            context, reads, header, tags_codes, message_filter
        )
        if code != _PULL_NOT_FOUND or not may_hold:
            response = pull_answer(request, code, suggested, next_offset, low, high, records)
            _count(context, group, topic, queue_id, count, size, next_offset)
            return response
    held = HeldPull(
        context, config_reads, request, header, connection, tags_codes, message_filter, group, topic, queue_id, offset
    )
    context.long_polling.hold(topic, queue_id, held, hold_ms / 1000)
    return None


class HeldPull(Hold):
    """A pull held by long polling, with everything its answer needs that does not depend on what
    arrives, decided when it was parked (its header, its filter, where to answer). Woken with the
    record a lone put's dispatch just wrote at exactly the offset it waits for, which its tag filter
    (if any) passes, it is answered from that record's place (``StoreReads.get_arrived``); in any other
    case (a timeout, several records, an SQL92 filter, an arrival seen on the dispatcher's thread) it
    reads the store as a fresh pull does. Either way its counters are updated after its answer is
    written."""

    __slots__ = (
        "config_reads",
        "connection",
        "context",
        "group",
        "header",
        "message_filter",
        "queue_id",
        "request",
        "tags_codes",
        "topic",
    )

    def __init__(
        self,
        context: BrokerContext,
        config_reads: BrokerReads,
        request: RemotingCommand,
        header: PullMessageRequestHeader,
        connection: Connection,
        tags_codes: frozenset[int] | None,
        message_filter: MessageFilter | None,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
    ) -> None:
        super().__init__(offset)
        self.group, self.topic, self.queue_id = group, topic, queue_id  # (the header's, read once)
        self.context = context
        self.config_reads = config_reads
        self.request = request
        self.header = header
        self.connection = connection
        self.tags_codes = tags_codes
        self.message_filter = message_filter

    def answer(self, arrived: bool, record: DispatchRequest | None) -> None:
        """Read again (from ``record`` when it is the one awaited), write the answer's frame
        (``answer_frame``), then count the pull."""
        connection = self.connection
        if not connection.is_open:
            return
        context, header, request = self.context, self.header, self.request
        try:
            reads = self.config_reads.current()
            read = None
            if record is not None and record.queue_offset == self.offset and self.message_filter is None:
                tags_codes = self.tags_codes
                if tags_codes is None or record.tags_code in tags_codes:
                    read = _read_arrived(context, reads, self.topic, self.queue_id, record)
            if read is None:
                read = _read(context, reads, header, self.tags_codes, self.message_filter)
            code, suggested, next_offset, low, high, records, count, size = read
            frame = answer_frame(request, code, suggested, next_offset, low, high, records)
        except Exception as exc:
            log.exception("held pull of %s-%d failed", self.topic, self.queue_id)
            connection.send(reply(request, ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}"))
            return
        connection.send_frame(frame, True)  # (at once: the woken consumer need not wait for the send's answer)
        _count(context, self.group, self.topic, self.queue_id, count, size, next_offset)


def _max_bytes(context: BrokerContext, header: PullMessageRequestHeader) -> int:
    """The records' bytes one answer may carry: the broker's ``max_pull_bytes``, or what the client asked
    for with rocketq's ``rqMaxBytes`` up to ``pull_bytes_limit``."""
    config = context.config
    asked = header.max_bytes
    if asked is None or asked < 1:
        return config.max_pull_bytes
    return min(asked, max(config.pull_bytes_limit, config.max_pull_bytes))


_Read = tuple[int, int, int, int, int, bytes | list[memoryview], int, int]
"""A pull's read: its response code, the broker to suggest, the next begin offset, the queue's min and
max offsets, the records (``records_to_write``), how many and their bytes."""


def _read(
    context: BrokerContext,
    reads: _ConfigReads,
    header: PullMessageRequestHeader,
    tags_codes: frozenset[int] | None,
    message_filter: MessageFilter | None,
) -> _Read:
    """The store's answer to a pull (``_Read``)."""
    offset, topic, queue_id = header.queue_offset, header.topic, header.queue_id  # (read once each)
    with context.store.get_messages(
        topic,
        queue_id,
        offset,
        max(1, header.max_msg_nums),
        tags_codes=tags_codes,
        message_filter=message_filter,
        max_bytes=_max_bytes(context, header),
    ) as result:
        status = result.status
        next_offset = int(result.next_begin_offset)
        pulled_to = int(result.physical_offsets[-1]) if result.physical_offsets else None
        found = status is _FOUND
        records = records_to_write(result.take_buffers(), result.total_bytes) if found else b""
        count, size = (result.message_count, result.total_bytes) if found else (0, 0)
        low, high = result.min_offset, result.max_offset
    if found:  # (the common answer, without a match on enum members: see rocketq.native.modules)
        code = _SUCCESS
    else:
        match status:
            case GetStatus.NO_MATCHED_MESSAGE | GetStatus.MESSAGE_WAS_REMOVING:
                code = ResponseCode.PULL_RETRY_IMMEDIATELY
            case GetStatus.NO_MATCHED_LOGIC_QUEUE | GetStatus.NO_MESSAGE_IN_QUEUE:
                code = _PULL_OFFSET_MOVED if offset != 0 else _PULL_NOT_FOUND
                next_offset = 0
            case GetStatus.OFFSET_OVERFLOW_BADLY | GetStatus.OFFSET_TOO_SMALL:
                code = _PULL_OFFSET_MOVED
            case _:
                code = _PULL_NOT_FOUND
    if code == _PULL_OFFSET_MOVED:
        log.info(
            "pull of %s-%d by %s at %d moved to %d (queue [%d, %d))",
            topic,
            queue_id,
            header.consumer_group,
            offset,
            next_offset,
            low,
            high,
        )
    return code, _suggested(context, reads, pulled_to), next_offset, low, high, records, count, size


def _read_arrived(
    context: BrokerContext, reads: _ConfigReads, topic: str, queue_id: int, record: DispatchRequest
) -> _Read | None:
    """``_read`` of a pull at ``record``'s queue offset with no filter or one ``record`` passes, from
    the record itself (``StoreReads.get_arrived``); None when the store must be read.
    ``tests/broker/test_held_pull_answer.py`` holds the two answers equal (hypothesis)."""
    physical = record.commit_log_offset
    found = context.store.get_arrived(topic, queue_id, record.queue_offset, physical, record.size)
    if found is None:
        return None
    view, low, high = found
    size = record.size
    return _SUCCESS, _suggested(context, reads, physical), record.queue_offset + 1, low, high, [view], 1, size


def _count(
    context: BrokerContext, group: str, topic: str, queue_id: int, count: int, size: int, next_offset: int
) -> None:
    """Count a pull's answer: the group's consume rates (when it found messages) and the pull counters."""
    if count:
        context.consume_rates.record(group, topic, count, size, queue_id, next_offset)
    context.pull_counters.record(count)


def _suggested(context: BrokerContext, reads: _ConfigReads, pulled_to: int | None) -> int:
    """The answer's ``suggest_broker_id``, for a read whose last record starts at ``pulled_to`` (None:
    no record), by the broker's config as ``reads`` has it."""
    is_slave, slave_read_enable, in_memory_bytes = reads.is_slave, reads.slave_read_enable, reads.in_memory_bytes
    lag_bytes = 0 if pulled_to is None else context.store.commit_log.max_offset - pulled_to
    # whether a slave could take the queue is asked only when the suggestion depends on it
    may_offer = not is_slave and (slave_read_enable or lag_bytes > in_memory_bytes)
    return suggest_broker_id(
        is_slave=is_slave,
        own_id=reads.own_id,
        slave_read_enable=slave_read_enable,
        slave_available=may_offer and context.slave_available(),
        lag_bytes=lag_bytes,
        in_memory_bytes=in_memory_bytes,
    )


__all__ = [  # (the pull's answers and sites are made in their own modules: named here as the handler's)
    "FLAG_COMMIT_OFFSET",
    "FLAG_SUBSCRIPTION",
    "FLAG_SUSPEND",
    "IN_PLACE_VIEW_BYTES",
    "MASTER_ID",
    "SLAVE_ID",
    "BrokerReads",
    "HeldPull",
    "handlers",
    "pull",
    "pull_answer",
    "pull_header",
    "records_to_write",
    "suggest_broker_id",
]
