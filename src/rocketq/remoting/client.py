"""RemotingClient: one reused connection per peer address, invoke / async invoke / oneway."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

from rocketq.protocol import DEFAULT_MAX_FRAME_SIZE, ONEWAY_FLAG, RemotingCommand, ResponseCode, make_response
from rocketq.remoting.connection import Connection, RequestHandler
from rocketq.remoting.errors import RemotingConnectError

log = logging.getLogger(__name__)

T = TypeVar("T")


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise RemotingConnectError(address, "address must be host:port")
    return host, int(port)


RequestSigner = Callable[[RemotingCommand], None]
"""Adds a signature to a request before it is sent (``rocketq.acl.sign`` with the client's credentials)."""


class RemotingClient:
    """Thread safety: use from one event loop. ``handlers`` answer requests the peer sends us;
    ``sign``, when given, signs every request this client sends (invoke, async invoke and oneway)."""

    def __init__(
        self,
        *,
        handlers: Mapping[int, RequestHandler] | None = None,
        connect_timeout_s: float = 3.0,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        on_close: Callable[[str], None] | None = None,
        sign: RequestSigner | None = None,
    ) -> None:
        self.handlers = dict(handlers or {})
        self._sign = sign
        self._connect_timeout_s = connect_timeout_s
        self._max_frame_size = max_frame_size
        self._on_close = on_close
        self._connections: dict[str, Connection] = {}
        self._connecting: dict[str, asyncio.Future[Connection]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    def open_connection(self, address: str) -> Connection | None:
        """The open connection to ``address``, or None when there is none yet (``connection`` makes it)."""
        existing = self._connections.get(address)
        return existing if existing is not None and existing.is_open else None

    async def connection(self, address: str) -> Connection:
        """The open connection to ``address``, connecting once when there is none."""
        existing = self._connections.get(address)
        if existing is not None and existing.is_open:
            return existing
        if self._closed:
            raise RemotingConnectError(address, "client is closed")
        pending = self._connecting.get(address)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
        self._connecting[address] = future
        try:
            connection = await self._connect(address)
            self._connections[address] = connection
            future.set_result(connection)
            return connection
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: other waiters get it through shield
            raise
        finally:
            del self._connecting[address]

    async def _connect(self, address: str) -> Connection:
        host, port = split_address(address)
        loop = asyncio.get_running_loop()

        def factory() -> Connection:
            return Connection(
                self._on_request,
                max_frame_size=self._max_frame_size,
                on_close=lambda conn: self._closed_connection(address, conn),
            )

        try:
            async with asyncio.timeout(self._connect_timeout_s):
                _, connection = await loop.create_connection(factory, host, port)
        except TimeoutError:
            raise RemotingConnectError(address, f"timed out after {self._connect_timeout_s}s") from None
        except OSError as exc:
            raise RemotingConnectError(address, exc.strerror or str(exc)) from exc
        return connection

    def _closed_connection(self, address: str, connection: Connection) -> None:
        if self._connections.get(address) is connection:
            del self._connections[address]
        if self._on_close is not None:
            self._on_close(address)

    def _on_request(self, request: RemotingCommand, connection: Connection) -> None:
        task = asyncio.get_running_loop().create_task(self._handle(request, connection))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _handle(self, request: RemotingCommand, connection: Connection) -> None:
        handler = self.handlers.get(request.code)
        try:
            if handler is None:
                response: RemotingCommand | None = make_response(
                    request, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f"request code {request.code} is not supported"
                )
            else:
                response = await handler(request, connection)
        except Exception as exc:
            log.exception("client handler for code=%d failed", request.code)
            response = make_response(request, ResponseCode.SYSTEM_ERROR, str(exc))
        if response is not None and not request.flag & ONEWAY_FLAG and connection.is_open:
            connection.send(response)

    @overload
    async def invoke(self, address: str, request: RemotingCommand, timeout_s: float) -> RemotingCommand: ...

    @overload
    async def invoke(
        self, address: str, request: RemotingCommand, timeout_s: float, read: Callable[[RemotingCommand], T]
    ) -> T: ...

    async def invoke(
        self,
        address: str,
        request: RemotingCommand,
        timeout_s: float,
        read: Callable[[RemotingCommand], Any] | None = None,
    ) -> Any:
        """Send ``request`` to ``address`` and wait for the response (connect time counts); with
        ``read``, for what ``read`` makes of it in the read that brought it (``Connection.invoke``)."""
        if self._sign is not None:
            self._sign(request)
        connection = self._connections.get(address)
        if connection is None or not connection.is_open:
            async with asyncio.timeout(timeout_s):
                connection = await self.connection(address)
        if read is None:
            return await connection.invoke(request, timeout_s)
        return await connection.invoke(request, timeout_s, read)

    def invoke_callback(
        self,
        address: str,
        request: RemotingCommand,
        timeout_s: float,
        callback: Callable[[RemotingCommand | None, BaseException | None], None],
    ) -> asyncio.Task[None]:
        """Async invoke: ``callback(response, error)`` runs on the loop when the call completes."""

        async def run() -> None:
            try:
                response = await self.invoke(address, request, timeout_s)
            except Exception as exc:
                callback(None, exc)
            else:
                callback(response, None)

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def oneway(self, address: str, request: RemotingCommand) -> None:
        if self._sign is not None:
            self._sign(request)
        connection = await self.connection(address)
        connection.oneway(request)

    async def aclose(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        connections = list(self._connections.values())
        self._connections.clear()
        for connection in connections:
            connection.close()
        for connection in connections:
            try:
                async with asyncio.timeout(1):
                    await connection.closed
            except TimeoutError:
                connection.abort()
