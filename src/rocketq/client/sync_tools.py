"""Blocking twins of the tool clients: ``SyncAdminClient`` (``AdminClient``) and ``SyncQueueReader``
(``QueueReader``). Like the facades in ``rocketq.client.sync``, each runs its async client on a private
event-loop thread (``LoopThread``) and every call hops into that loop.

Their methods are not written out one by one: ``blocking(AsyncClass.method)`` makes the blocking form of
an async method, with the same parameters, result type and docstring, so a method added to the async
client needs one line here.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Callable, Coroutine, Generator
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, Self, TypeVar, overload

from rocketq.client.admin import AdminClient
from rocketq.client.config import ClientConfig
from rocketq.client.message import MessageQueue
from rocketq.client.queue_reader import DEFAULT_PULL_BATCH_SIZE, QueueChunk, QueueReader
from rocketq.client.selector import MessageSelector
from rocketq.client.sync import LoopThread
from rocketq.common.group_topics import TOOLS_CONSUMER_GROUP


class _AsyncClient(Protocol):
    async def aclose(self) -> None: ...


P = ParamSpec("P")
T = TypeVar("T")
C = TypeVar("C", bound=_AsyncClient)


class _LoopClient(Generic[C]):
    """An async client of type C owned by a loop thread: built on it by ``_open``, closed with it by
    ``close`` (or the ``with`` block)."""

    _loop: LoopThread
    _client: C

    def _open(self, thread_name: str, make: Callable[[], C]) -> None:
        """Start the loop thread and build the client on it; the thread stops again when that fails."""
        self._loop = LoopThread(name=thread_name)
        try:
            self._client = self._loop.call(_build(make))
        except BaseException:
            self._loop.stop()
            raise

    def close(self) -> None:
        """Disconnect and stop the loop thread."""
        self._loop.close_with(self._client.aclose())

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class blocking(Generic[C, P, T]):
    """``blocking(AsyncClient.method)`` in the body of a ``_LoopClient`` subclass: the method, run on the
    instance's loop thread and waited for."""

    def __init__(self, method: Callable[Concatenate[C, P], Coroutine[Any, Any, T]]) -> None:
        self._method = method
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> blocking[C, P, T]: ...

    @overload
    def __get__(self, instance: _LoopClient[C], owner: type[Any]) -> Callable[P, T]: ...

    def __get__(self, instance: _LoopClient[C] | None, owner: type[Any]) -> blocking[C, P, T] | Callable[P, T]:
        if instance is None:
            return self
        method, loop, client = self._method, instance._loop, instance._client

        @functools.wraps(method)
        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            return loop.call(method(client, *args, **kwargs))

        return call


class SyncAdminClient(_LoopClient[AdminClient]):
    """Blocking twin of ``AdminClient``: the same methods, without ``await``."""

    def __init__(self, namesrv_addr: str, *, timeout_s: float = 5.0) -> None:
        self._open("rocketq-admin", lambda: AdminClient(namesrv_addr, timeout_s=timeout_s))

    cluster_info = blocking(AdminClient.cluster_info)
    topic_list = blocking(AdminClient.topic_list)
    topic_route = blocking(AdminClient.topic_route)
    master_addresses = blocking(AdminClient.master_addresses)
    update_topic = blocking(AdminClient.update_topic)
    delete_topic = blocking(AdminClient.delete_topic)
    broker_runtime_info = blocking(AdminClient.broker_runtime_info)
    topic_status = blocking(AdminClient.topic_status)
    view_message = blocking(AdminClient.view_message)
    query_by_key = blocking(AdminClient.query_by_key)
    query_by_id = blocking(AdminClient.query_by_id)
    groups_consuming = blocking(AdminClient.groups_consuming)
    consume_stats = blocking(AdminClient.consume_stats)
    consumer_progress = blocking(AdminClient.consumer_progress)
    consumer_groups = blocking(AdminClient.consumer_groups)
    groups_overview = blocking(AdminClient.groups_overview)
    consumer_connection = blocking(AdminClient.consumer_connection)
    commit_offsets = blocking(AdminClient.commit_offsets)
    reset_offset_by_time = blocking(AdminClient.reset_offset_by_time)
    update_subscription_group = blocking(AdminClient.update_subscription_group)
    pending_transactions = blocking(AdminClient.pending_transactions)


class SyncQueueReader(_LoopClient[QueueReader]):
    """Blocking twin of ``QueueReader``; ``read`` is a plain iterator of chunks."""

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
        self._open(
            "rocketq-queue-reader",
            lambda: QueueReader(
                namesrv_addr,
                config=config,
                group=group,
                pull_batch_size=pull_batch_size,
                timeout_s=timeout_s,
                max_pull_bytes=max_pull_bytes,
            ),
        )

    queues = blocking(QueueReader.queues)
    queues_by_broker = blocking(QueueReader.queues_by_broker)
    min_offset = blocking(QueueReader.min_offset)
    max_offset = blocking(QueueReader.max_offset)
    offset_for_timestamp = blocking(QueueReader.offset_for_timestamp)
    offsets = blocking(QueueReader.offsets)
    pull = blocking(QueueReader.pull)
    messages = blocking(QueueReader.messages)

    def read(
        self,
        queue: MessageQueue,
        start: int,
        end: int | None = None,
        *,
        selector: MessageSelector | str | None = None,
        skip_lost: bool = False,
        read_ahead_bytes: int = 0,
    ) -> Generator[QueueChunk, None, None]:
        """``QueueReader.read``: the next pull is in flight on the loop thread while the caller works.
        With ``read_ahead_bytes`` the chunks cross from the loop thread in groups of about that many
        bytes of records (one thread hand-over per group, not per pull)."""
        chunks = self._client.read(
            queue, start, end, selector=selector, skip_lost=skip_lost, read_ahead_bytes=read_ahead_bytes
        )
        try:
            while True:
                group, failure = self._loop.call(_next_group(chunks, read_ahead_bytes))
                yield from group
                if failure is not None:
                    raise failure
                if not group:
                    return
        finally:
            self._loop.call(chunks.aclose())


async def _build(make: Callable[[], T]) -> T:
    return make()  # on the loop: the client's asyncio state belongs to it


async def _next_group(chunks: AsyncGenerator[QueueChunk, None], size: int) -> tuple[list[QueueChunk], Exception | None]:
    """The next chunks, at least one and up to ``size`` bytes of records or more (none: the read is
    over), and the error that ended the read after them, if one did (raised once they are handed on)."""
    group: list[QueueChunk] = []
    gathered = 0
    try:
        while not group or gathered < size:
            chunk = await chunks.__anext__()
            group.append(chunk)
            gathered += len(chunk.records)
    except StopAsyncIteration:
        pass
    except Exception as exc:
        if not group:
            raise
        return group, exc
    return group, None
