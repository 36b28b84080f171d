"""QueueReader: read exact offset ranges of queues, as tools and data pipelines do, without consuming
them as a group.

A ``PullConsumer`` is the wrong tool for "messages 100 to 200 of queue 3": it joins a group, prefetches
past what it was asked for, long-polls at the head of the queue, creates the group's retry topic and
commits offsets when it closes. A ``QueueReader`` does none of that. It pulls with the tools' group
(``TOOLS_CONSUMER``, which every broker knows), carries its own subscription in every pull (tags or
SQL92, filtered by the broker), never commits and never sends heartbeats: reading leaves nothing behind
on the brokers.

    async with QueueReader("127.0.0.1:9876") as reader:
        for queue in await reader.queues("Orders"):
            low, high = await reader.offsets([queue])[queue]
            async for chunk in reader.read(queue, low, high):
                for message in chunk.messages: ...

Each pull of a range asks for at most what is left of it. A tag or SQL92 filter makes the broker skip
messages (and possibly return some past the range): a chunk holds only the wanted messages below the
range's end, and its ``next_offset`` says where reading goes on, past whatever was skipped. ``read``
keeps one pull in flight while the caller works on the previous chunk, never one beyond the range;
with ``read_ahead_bytes`` it goes on pulling, one pull after the other, until that many bytes of
records wait for the caller (a caller that works on a batch of chunks at a time, as the Spark source
does, then finds the next batch pulled meanwhile instead of waiting for each pull in turn).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import struct
from collections.abc import AsyncGenerator, Iterable
from dataclasses import dataclass
from functools import cached_property

from rocketq.client.config import ClientConfig
from rocketq.client.errors import MQClientError, RouteNotFoundError, ValidationError
from rocketq.client.instance import ClientInstance
from rocketq.client.message import MessageExt, MessageQueue, decode_messages
from rocketq.client.pull import PullStatus, is_pull_answer, pull_outcome, pull_request, suggested_broker_id
from rocketq.client.route import MASTER_ID, subscribe_queues
from rocketq.client.selector import MessageSelector
from rocketq.common.group_topics import TOOLS_CONSUMER_GROUP
from rocketq.common.record import QUEUE_OFFSET_AT, RecordFormatError
from rocketq.protocol import Body, RemotingCommand, RequestCode
from rocketq.protocol.headers import GetMaxOffsetRequestHeader, GetMinOffsetRequestHeader, SearchOffsetRequestHeader
from rocketq.remoting import RemotingError

log = logging.getLogger(__name__)

DEFAULT_PULL_BATCH_SIZE = 32

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class OffsetOutOfRangeError(MQClientError):
    """A range cannot be read as asked: its start is no longer kept (aged out), or the queue ends before
    the range does (it was deleted, or lost messages the broker had not flushed)."""

    def __init__(self, queue: MessageQueue, offset: int, min_offset: int, max_offset: int, reason: str) -> None:
        self.queue = queue
        self.offset = offset
        self.min_offset = min_offset
        self.max_offset = max_offset
        super().__init__(f"{queue}: offset {offset} {reason} (the queue holds [{min_offset}, {max_offset}))")


@dataclass(frozen=True)
class QueueChunk:
    """What one pull brought: the stored records as the broker sent them, which of them are wanted, and
    where the next pull starts.

    ``records`` is the pull's body unchanged (concatenated stored records, for a columnar decode): ``bytes``,
    or a read-only ``memoryview`` of the buffer a large answer was received into. When
    ``positions`` is None every record in it is wanted; otherwise only the records starting at those
    byte positions are (the broker also sent messages past the range's end or whose tag only shares
    its hash code with a wanted one)."""

    queue: MessageQueue
    offset: int  # where this pull started
    next_offset: int  # where the next pull starts: past every message this one covered, filtered or not
    min_offset: int  # the queue's bounds when the broker answered
    max_offset: int
    status: PullStatus
    records: Body = b""
    positions: tuple[int, ...] | None = None

    @property
    def count(self) -> int:
        """Wanted messages in this chunk."""
        if self.positions is not None:
            return len(self.positions)
        return len(record_starts(self.records)) if self.records else 0

    @cached_property
    def messages(self) -> list[MessageExt]:
        """The wanted messages, decoded."""
        if not self.records:
            return []
        messages = decode_messages(self.records)
        if self.positions is None:
            return messages
        wanted = set(self.positions)
        return [m for m, at in zip(messages, record_starts(self.records), strict=True) if at in wanted]


def record_starts(records: Body) -> list[int]:
    """The byte position of each stored record in ``records``."""
    starts, position, end = [], 0, len(records)
    while position < end:
        starts.append(position)
        size: int = _I32.unpack_from(records, position)[0]
        if size <= 0:
            raise RecordFormatError(position, f"record size {size}")
        position += size
    return starts


def _wanted_positions(records: Body, end: int | None, tags: frozenset[str]) -> tuple[int, ...] | None:
    """Positions of the records below ``end`` whose tag is one of ``tags`` (any tag when empty); None
    when that is every record."""
    starts = record_starts(records)
    if tags:
        messages = decode_messages(records)
        below = [m.queue_offset < end if end is not None else True for m in messages]
        keep = [at for at, m, ok in zip(starts, messages, below, strict=True) if ok and m.tags in tags]
    elif end is not None:
        keep = [at for at in starts if _I64.unpack_from(records, at + QUEUE_OFFSET_AT)[0] < end]
    else:
        return None
    return None if len(keep) == len(starts) else tuple(keep)


class QueueReader:
    """Stateless, groupless reads of queue ranges (async; ``SyncQueueReader`` is the blocking twin).
    Needs no ``start()``: routes are asked for when first needed. Use from one event loop."""

    def __init__(
        self,
        namesrv_addr: str | None = None,
        *,
        config: ClientConfig | None = None,
        group: str = TOOLS_CONSUMER_GROUP,
        pull_batch_size: int = DEFAULT_PULL_BATCH_SIZE,
        timeout_s: float | None = None,
        max_pull_bytes: int | None = None,
    ) -> None:
        """``group`` names the pulls to the broker only (its consume rate counts them); nothing is
        committed for it. ``timeout_s``: how long a request may take (default: the config's).
        ``max_pull_bytes``: the records' bytes to ask each pull's answer for (rocketq brokers grant up to
        their ``pullBytesLimit``, 8 MiB by default; RocketMQ's answer their own 256 KiB); None: the
        broker's ``maxTransferBytesOnMessageInMemory``."""
        config = config or ClientConfig(instance_name="queue-reader")
        if namesrv_addr is not None:
            config = dataclasses.replace(config, namesrv_addr=namesrv_addr)
        if timeout_s is not None:
            config = dataclasses.replace(config, request_timeout_s=timeout_s)
        if pull_batch_size < 1:
            raise ValidationError(f"pull_batch_size must be at least 1, not {pull_batch_size}")
        if max_pull_bytes is not None and max_pull_bytes < 1:
            raise ValidationError(f"max_pull_bytes must be at least 1, not {max_pull_bytes}")
        self.config = config
        self.max_pull_bytes = max_pull_bytes
        self.group = group
        self.pull_batch_size = pull_batch_size
        self._instance = ClientInstance(config)
        self._pull_from: dict[MessageQueue, int] = {}  # the broker id of its group each queue's next pull goes to

    async def aclose(self) -> None:
        """Disconnect from the NameServers and brokers."""
        await self._instance.aclose()

    async def __aenter__(self) -> QueueReader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- routes and offsets ---------------------------------------------------------------------------

    async def queues(self, topic: str) -> list[MessageQueue]:
        """Every readable queue of ``topic`` (fresh from the name servers), sorted; MQClientError when
        the name servers do not know the topic."""
        route = await self._instance.update_route(topic)
        if route is None:
            raise RouteNotFoundError(f"topic {topic!r} does not exist (the name servers do not know it)")
        return subscribe_queues(topic, route)

    async def queues_by_broker(self, topic: str) -> dict[str, list[MessageQueue]]:
        """``queues(topic)`` grouped by broker name."""
        grouped: dict[str, list[MessageQueue]] = {}
        for queue in await self.queues(topic):
            grouped.setdefault(queue.broker_name, []).append(queue)
        return grouped

    async def min_offset(self, queue: MessageQueue) -> int:
        """The queue's first offset still kept."""
        fields = GetMinOffsetRequestHeader(topic=queue.topic, queue_id=queue.queue_id).to_ext_fields()
        return await self._instance.queue_offset(RequestCode.GET_MIN_OFFSET, queue.topic, queue.broker_name, fields)

    async def max_offset(self, queue: MessageQueue) -> int:
        """The offset the queue's next message will get (one past its last)."""
        fields = GetMaxOffsetRequestHeader(topic=queue.topic, queue_id=queue.queue_id).to_ext_fields()
        return await self._instance.queue_offset(RequestCode.GET_MAX_OFFSET, queue.topic, queue.broker_name, fields)

    async def offset_for_timestamp(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """The first offset of a message stored at or after ``timestamp_ms`` (the max offset when none)."""
        fields = SearchOffsetRequestHeader(
            topic=queue.topic, queue_id=queue.queue_id, timestamp=timestamp_ms
        ).to_ext_fields()
        return await self._instance.queue_offset(
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, queue.topic, queue.broker_name, fields
        )

    async def offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, tuple[int, int]]:
        """(min offset, max offset) of each queue, asked for all at once."""
        wanted = list(queues)
        bounds = await asyncio.gather(*(self._bounds(queue) for queue in wanted))
        return dict(zip(wanted, bounds, strict=True))

    async def _bounds(self, queue: MessageQueue) -> tuple[int, int]:
        low, high = await asyncio.gather(self.min_offset(queue), self.max_offset(queue))
        return low, high

    # -- reading --------------------------------------------------------------------------------------

    async def pull(
        self,
        queue: MessageQueue,
        offset: int,
        *,
        end: int | None = None,
        selector: MessageSelector | str | None = None,
        max_nums: int | None = None,
        wait_s: float = 0.0,
    ) -> QueueChunk:
        """One pull from ``offset``: at most ``max_nums`` (default ``pull_batch_size``) messages, none at or
        past ``end``. ``wait_s`` > 0 lets the broker hold a pull at the head of the queue that long for a
        message to arrive (long polling); by default it answers at once."""
        chosen = MessageSelector.of(selector) if selector is not None else MessageSelector.by_tag()
        count = max_nums or self.pull_batch_size
        if end is not None:
            if end <= offset:
                raise ValidationError(f"{queue}: empty range [{offset}, {end})")
            count = min(count, end - offset)
        suspend_ms = int(wait_s * 1000)
        request = pull_request(
            self.group,
            queue,
            offset,
            count,
            chosen.expression,
            suspend_ms=suspend_ms,
            expression_type=chosen.expression_type,
            max_bytes=self.max_pull_bytes,
        )
        response, address = await self._pull_from_group(queue, request, self.config.request_timeout_s + wait_s)
        status, next_begin, low, high = pull_outcome(response, address)
        if end is not None and status in (PullStatus.FOUND, PullStatus.NO_MATCHED_MSG):
            next_begin = min(next_begin, end)  # filtered messages skipped past the range's end
        if status is not PullStatus.FOUND:
            return QueueChunk(queue, offset, next_begin, low, high, status)
        records = response.body  # (a large answer: the buffer it was received into, not copied)
        tags = chosen.tags()
        # an unfiltered pull of at most ``end - offset`` messages cannot bring one past the range
        filtered = bool(tags) or not chosen.is_tag
        try:
            positions = _wanted_positions(records, end, tags) if filtered else None
        except ValueError as exc:
            raise MQClientError(f"malformed pull response from {address}: {exc}") from exc
        return QueueChunk(queue, offset, next_begin, low, high, status, records, positions)

    async def _pull_from_group(
        self, queue: MessageQueue, request: RemotingCommand, timeout_s: float
    ) -> tuple[RemotingCommand, str]:
        """Send the pull to the broker of the queue's group the last answer suggested (the master at
        first; docs/replication.md#reads-from-slaves), and follow the new answer's suggestion next time.
        A broker that cannot be reached has this pull sent at once to the group's other broker (a slave
        when the master failed), and the route is asked for again next time; a slave that refuses (it
        has not copied the topic from its master yet) has the master answer. One retry per pull."""
        instance, name = self._instance, queue.broker_name
        target = instance.broker_address(name, self._pull_from.get(queue, MASTER_ID))
        if target is None:
            await instance.update_route(queue.topic)
            target = instance.broker_address(name, self._pull_from.get(queue, MASTER_ID))
        if target is None:
            raise RouteNotFoundError(f"{queue}: no broker of {name} in the route of {queue.topic}")
        retried = False
        while True:
            address, broker_id = target
            try:
                response = await instance.invoke_broker(address, request, timeout_s)
            except RemotingError:
                fallback = instance.fallback_broker_id(name, broker_id)
                self._pull_from[queue] = fallback
                other = instance.broker_addrs.get(name, {}).get(fallback)
                instance.broker_addrs.pop(name, None)  # ask the name servers again next time
                if retried or other is None or fallback == broker_id:
                    raise
                log.info(
                    "pull of %s from broker %d at %s failed: asking broker %d", queue, broker_id, address, fallback
                )
                target, retried = (other, fallback), True
                continue
            master = instance.master_address(name)
            if broker_id != MASTER_ID and not is_pull_answer(response) and master and not retried:
                log.info("pull of %s from slave %s refused (%s): asking the master", queue, address, response.code)
                target, retried = (master, MASTER_ID), True
                continue
            self._pull_from[queue] = suggested_broker_id(response, address)
            return response, address

    def read(
        self,
        queue: MessageQueue,
        start: int,
        end: int | None = None,
        *,
        selector: MessageSelector | str | None = None,
        skip_lost: bool = False,
        read_ahead_bytes: int = 0,
    ) -> AsyncGenerator[QueueChunk, None]:
        """The chunks of ``[start, end)`` (``end`` None: up to the queue's end now), one per pull, with the
        next pull already in flight while the caller handles one. With ``read_ahead_bytes`` > 0 the pulls
        go on in the background, in order, while less than that many bytes of records wait for the caller.

        Raises ``OffsetOutOfRangeError`` when part of the range is gone: it starts below what the queue
        still keeps, or the queue ends before ``end``. With ``skip_lost`` the reader moves on past
        messages that aged out instead (the chunk that says so has status OFFSET_ILLEGAL and no records)
        and stops where the queue ends."""
        chunks = self._read(queue, start, end, selector, skip_lost)
        if read_ahead_bytes <= 0:
            return chunks
        return _read_ahead(chunks, read_ahead_bytes)

    async def _read(
        self, queue: MessageQueue, start: int, end: int | None, selector: MessageSelector | str | None, skip_lost: bool
    ) -> AsyncGenerator[QueueChunk, None]:
        offset = start
        pending: asyncio.Task[QueueChunk] | None = None
        unfiltered = selector is None or MessageSelector.of(selector) == MessageSelector.by_tag()
        fits: int | None = None  # messages the broker's byte limit let through in the last full pull

        def next_pull(at: int) -> asyncio.Task[QueueChunk]:
            # ask for about what fits: a broker reads every queue entry asked for, whatever it returns
            wanted = min(self.pull_batch_size, fits + fits // 4 + 1) if fits else None
            return asyncio.ensure_future(self.pull(queue, at, end=end, selector=selector, max_nums=wanted))

        try:
            while end is None or offset < end:
                if pending is None:
                    pending = next_pull(offset)
                chunk = await pending
                pending = None
                if unfiltered and chunk.status is PullStatus.FOUND:
                    returned = chunk.next_offset - chunk.offset
                    limit = self.pull_batch_size if end is None else min(self.pull_batch_size, end - chunk.offset)
                    fits = returned if returned < limit else None
                moved_back = chunk.next_offset < offset or (
                    chunk.next_offset == offset and chunk.status is not PullStatus.NO_NEW_MSG
                )
                if chunk.status is PullStatus.NO_NEW_MSG or moved_back:  # the queue ends here
                    if end is None:
                        return
                    if not skip_lost:
                        raise OffsetOutOfRangeError(
                            queue, offset, chunk.min_offset, chunk.max_offset, f"is the queue's end, before {end}"
                        )
                    log.warning("%s ends at %d, before the range's end %d", queue, chunk.max_offset, end)
                    return
                if chunk.status is PullStatus.OFFSET_ILLEGAL:
                    if not skip_lost:
                        raise OffsetOutOfRangeError(
                            queue, offset, chunk.min_offset, chunk.max_offset, "is no longer kept"
                        )
                    log.warning("%s: messages [%d, %d) are no longer kept; skipped", queue, offset, chunk.next_offset)
                offset = chunk.next_offset
                if end is None or offset < end:  # read ahead, never past the range
                    pending = next_pull(offset)
                yield chunk
        finally:
            if pending is not None:  # the caller stopped early: the read-ahead is not wanted
                pending.cancel()
                await asyncio.wait([pending])
                if not pending.cancelled():
                    pending.exception()  # retrieved: a failed read-ahead is nobody's error now

    async def messages(
        self, queue: MessageQueue, start: int, end: int | None = None, *, selector: MessageSelector | str | None = None
    ) -> list[MessageExt]:
        """Every wanted message of ``[start, end)``, decoded (``read`` for how ranges are read)."""
        found: list[MessageExt] = []
        async for chunk in self.read(queue, start, end, selector=selector):
            found.extend(chunk.messages)
        return found


async def _read_ahead(chunks: AsyncGenerator[QueueChunk, None], limit: int) -> AsyncGenerator[QueueChunk, None]:
    """``chunks``, drawn by a task of their own while less than ``limit`` bytes of records wait; their
    error, if any, is raised after the chunks before it. Closing this stops the task and the pulls."""
    ready: collections.deque[QueueChunk] = collections.deque()
    arrived, room = asyncio.Event(), asyncio.Event()
    waiting = 0  # bytes of records in ``ready``
    finished = False
    failure: BaseException | None = None

    async def fill() -> None:
        nonlocal waiting, finished, failure
        try:
            async for chunk in chunks:
                ready.append(chunk)
                waiting += len(chunk.records)
                arrived.set()
                while waiting >= limit:
                    room.clear()
                    await room.wait()
        except BaseException as exc:  # handed to the caller, in order: a read never ends short silently
            failure = exc
            if not isinstance(exc, Exception):  # cancelled (this task, or a pull by someone else)
                raise
        finally:
            finished = True
            arrived.set()

    filler = asyncio.ensure_future(fill())
    try:
        while True:
            while not ready:
                if finished:
                    if failure is not None:
                        raise failure
                    return
                arrived.clear()
                await arrived.wait()
            chunk = ready.popleft()
            waiting -= len(chunk.records)
            room.set()
            yield chunk
    finally:
        filler.cancel()
        await asyncio.wait([filler])
        await chunks.aclose()
