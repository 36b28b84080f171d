"""RemotingServer: accept connections, decode requests, dispatch them through a handler table.

A handler answers at once or returns an awaitable (a coroutine), started eagerly as its request is
decoded (it gets a Task only if it waits; see ``ServerHandler``). Every connection is held to the
server's ``ServerLimits`` (``rocketq.remoting.limits``): answers it does not read, frames it does
not finish and idleness.
Handlers marked ``blocking`` are plain functions run in a thread pool so the loop never waits on them.
An unknown request code gets REQUEST_CODE_NOT_SUPPORTED; a handler that raises gets SYSTEM_ERROR with
the exception text; bad frames close only their connection. Oneway requests get no reply, whatever the
handler returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from rocketq.protocol import DEFAULT_MAX_FRAME_SIZE, ONEWAY_FLAG, RemotingCommand, ResponseCode, make_response
from rocketq.remoting.connection import Connection, RequestSink
from rocketq.remoting.limits import RequestBytesBudget, ServerLimits, process_budget
from rocketq.remoting.tasks import cancel_and_wait, start_eagerly

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BlockingHandler:
    """A synchronous handler to run in the server's thread pool."""

    function: Callable[[RemotingCommand, Connection], RemotingCommand | None]


ServerHandler = Callable[[RemotingCommand, Connection], RemotingCommand | Awaitable[RemotingCommand | None] | None]
"""A server's handler: its answer at once (a response, or None for none), or an awaitable of it (an
async handler returns its coroutine). The hot handlers (sends) answer at once when they need not wait,
so such a request costs no coroutine and no context copy; an awaitable is run eagerly (``RequestHandler``)."""

HandlerTable = Mapping[int, ServerHandler | BlockingHandler]


async def awaited_answer(answer: RemotingCommand | Awaitable[RemotingCommand | None] | None) -> RemotingCommand | None:
    """The response a ``ServerHandler`` gave, awaited when it gave an awaitable (for code that wraps a
    handler: ``await awaited_answer(handler(request, connection))``)."""
    if answer is None or isinstance(answer, RemotingCommand):
        return answer
    return await answer


RequestGuard = Callable[[RemotingCommand, Connection], RemotingCommand | None]
"""Runs before every request's handler: None lets the request through, a response refuses it (the
broker's ACL, ``rocketq.broker.acl``). It runs on the event loop, so it must not block."""

RequestObserver = Callable[[RemotingCommand, RemotingCommand, float], None]
"""Told of each answer the server sent: (request, response, seconds from the request's start to its
answer, refusals and held requests included). Not told of oneway requests, nor of a request whose
connection closed first. It runs on the event loop, once per request: keep it cheap."""


class RemotingServer(RequestSink):
    """Serves the requests its connections read: each connection hands them to ``on_request`` (the
    server is their ``RequestSink``)."""

    def __init__(
        self,
        handlers: HandlerTable,
        *,
        host: str = "0.0.0.0",
        port: int = 0,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        limits: ServerLimits | None = None,
        budget: RequestBytesBudget | None = None,
        worker_threads: int = 8,
        on_close: Callable[[Connection], None] | None = None,
        on_idle: Callable[[Connection], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        guard: RequestGuard | None = None,
        observer: RequestObserver | None = None,
    ) -> None:
        """``guard``: checked before every handler (see ``RequestGuard``); unknown codes pass it too.
        ``budget``: the bytes of partial frames this server's connections share with others; by
        default the process-wide one (``process_budget``), at least ``limits.max_buffered_request_bytes``.
        ``clock``: monotonic seconds, for the stall and idle checks (tests pass a fake one).
        ``observer``: told of every answer sent (see ``RequestObserver``), for metrics."""
        self.handlers = dict(handlers)
        self._host = host
        self._port = port
        self._max_frame_size = max_frame_size
        self.limits = limits = limits or ServerLimits()
        self.budget = budget or process_budget(limits.max_buffered_request_bytes)
        self._clock = clock
        self._on_close = on_close
        self._on_idle = on_idle
        self._guard = guard
        self._observer = observer
        self._executor = ThreadPoolExecutor(worker_threads, thread_name_prefix="rocketq-handler")
        self._server: asyncio.Server | None = None
        self.connections: set[Connection] = set()
        self._in_flight: set[asyncio.Task[Any]] = set()
        self._idle_task: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        # Any: typeshed says tuple, uvloop returns a list, and compiled code would check the declared type
        server: Any = self._server
        return int(server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._new_connection, self._host, self._port, reuse_address=True)
        self._idle_task = asyncio.create_task(self._close_stalled_connections())
        log.info("remoting server listening on %s:%d", self._host, self.port)

    def _new_connection(self) -> Connection:
        connection = Connection(
            self,
            max_frame_size=self._max_frame_size,
            on_close=self._closed,
            limits=self.limits,
            budget=self.budget,
            clock=self._clock,
        )
        self.connections.add(connection)
        return connection

    def _closed(self, connection: Connection) -> None:
        self.connections.discard(connection)
        if self._on_close is not None:
            try:
                self._on_close(connection)
            except Exception:
                log.exception("close callback failed for %s", connection.remote_address)

    def on_request(self, request: RemotingCommand, connection: Connection) -> None:
        """Check the request (``guard``), then answer it: at once when its handler answers at once,
        else from ``_finish`` once the awaitable the handler returned is done."""
        began = time.perf_counter() if self._observer is not None else 0.0
        handler = self.handlers.get(request.code)
        answer: RemotingCommand | Awaitable[RemotingCommand | None] | None
        try:
            guard = self._guard
            refused = guard(request, connection) if guard is not None else None
            if refused is not None:
                answer = refused
            elif handler is None:
                answer = make_response(
                    request,
                    ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                    f"request code {request.code} is not supported",
                )
                log.info("unsupported request code=%d from %s", request.code, connection.remote_address)
            elif isinstance(handler, BlockingHandler):
                answer = self._run_blocking(handler, request, connection)
            else:
                answer = handler(request, connection)  # (an async handler's body runs in _finish)
        except Exception as exc:
            answer = self._failed(request, exc)
        if answer is None or isinstance(answer, RemotingCommand):
            self._answer(request, connection, answer, began)
            return
        task = start_eagerly(self._finish(answer, request, connection, began))  # most answer without waiting
        if task is not None:
            self._in_flight.add(task)
            task.add_done_callback(self._in_flight.discard)

    async def _run_blocking(
        self, handler: BlockingHandler, request: RemotingCommand, connection: Connection
    ) -> RemotingCommand | None:
        loop = asyncio.get_running_loop()
        connection.work_started()
        try:
            return await loop.run_in_executor(self._executor, handler.function, request, connection)
        finally:
            connection.work_finished()

    async def _finish(
        self,
        answer: Awaitable[RemotingCommand | None],
        request: RemotingCommand,
        connection: Connection,
        began: float,
    ) -> None:
        try:
            response = await answer
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            response = self._failed(request, exc)
        self._answer(request, connection, response, began)

    def _failed(self, request: RemotingCommand, exc: Exception) -> RemotingCommand:
        log.exception("handler for code=%d failed (opaque=%d)", request.code, request.opaque, exc_info=exc)
        return make_response(request, ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}")

    def _answer(
        self, request: RemotingCommand, connection: Connection, response: RemotingCommand | None, began: float
    ) -> None:
        if response is not None and not request.flag & ONEWAY_FLAG and connection.is_open:
            try:
                connection.send(response)
            except Exception:
                log.exception("cannot send response code=%d to %s", response.code, connection.remote_address)
            observer = self._observer
            if observer is not None:
                observer(request, response, time.perf_counter() - began)

    async def _close_stalled_connections(self) -> None:
        while True:
            await asyncio.sleep(self.limits.scan_interval_s)
            self.close_stalled_connections()

    def close_stalled_connections(self) -> int:
        """Close the connections idle for ``idle_timeout_s`` or with a frame incomplete for
        ``frame_timeout_s`` (the server checks every ``scan_interval_s``); returns how many."""
        now = self._clock()
        limits = self.limits
        closed = 0
        for connection in list(self.connections):
            started = connection.partial_frame_since
            if started is not None and now - started > limits.frame_timeout_s:
                log.warning(
                    "closing connection %s: a request frame incomplete for %.0f s (frame timeout %.0f s)",
                    connection.remote_address,
                    now - started,
                    limits.frame_timeout_s,
                )
            elif now - connection.last_activity > limits.idle_timeout_s:
                log.info("closing idle connection %s", connection.remote_address)
                if self._on_idle is not None:
                    self._on_idle(connection)
            else:
                continue
            connection.close()
            closed += 1
        return closed

    async def aclose(self, grace_s: float = 5.0) -> None:
        """Stop accepting, let in-flight requests finish (up to ``grace_s``), close connections."""
        if self._server is not None:
            self._server.close()
        await cancel_and_wait([self._idle_task])
        if self._in_flight:
            _, pending = await asyncio.wait(set(self._in_flight), timeout=grace_s)
            for task in pending:
                task.cancel()
        for connection in list(self.connections):
            connection.close()
        if self._server is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(grace_s):
                    await self._server.wait_closed()
        self._executor.shutdown(wait=False, cancel_futures=True)
