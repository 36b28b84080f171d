"""One remoting connection: frames over an asyncio transport, an opaque -> Future table.

Responses may arrive in any order (a broker answers a long-polling pull after later requests), so
requests are matched to responses by opaque. Requests that arrive on the connection (server side:
every request; client side: NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE, ...) go to the
``on_request`` callback, which owns replying.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import cast

from rocketq.protocol import (
    ONEWAY_FLAG,
    RESPONSE_FLAG,
    FrameDecoder,
    ProtocolError,
    RemotingCommand,
    encode_frame_parts,
)
from rocketq.remoting.errors import ConnectionClosedError, RemotingTimeoutError

log = logging.getLogger(__name__)

_opaques = itertools.count(1)

RequestHandler = Callable[[RemotingCommand, "Connection"], Awaitable[RemotingCommand | None]]
"""Handles one request; returns the response, or None when it replies later (or never: oneway).

A server runs its handlers eagerly (``tasks.start_eagerly``): until its first ``await`` that suspends, a
handler has no Task of its own, so what needs one (``asyncio.timeout``) must come after such a wait."""


def next_opaque() -> int:
    return next(_opaques) & 0x7FFFFFFF


class Connection(asyncio.Protocol):
    """Thread safety: use from its event loop only."""

    def __init__(
        self,
        on_request: Callable[[RemotingCommand, Connection], None],
        *,
        max_frame_size: int,
        on_close: Callable[[Connection], None] | None = None,
    ) -> None:
        self._on_request = on_request
        self._on_close = on_close
        self._decoder = FrameDecoder(max_frame_size=max_frame_size)
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._transport: asyncio.Transport | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.remote_address = "?"
        self.last_activity = time.monotonic()
        self.attributes: dict[str, object] = {}  # per-connection state for the owner (client ids ...)

    # -- asyncio.Protocol -----------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but they have the same methods
        self._transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and len(peer) >= 2:
            self.remote_address = f"{peer[0]}:{peer[1]}"

    def data_received(self, data: bytes) -> None:
        self.last_activity = time.monotonic()
        decoder = self._decoder
        try:
            commands = decoder.decode(data)
        except ProtocolError as exc:
            log.warning("closing connection from %s: %s", self.remote_address, exc)
            self.close()
            return
        for command in commands:
            self._dispatch(command)
        if decoder.error is not None:  # a malformed frame after these: they were served, now close
            log.warning("closing connection from %s: %s", self.remote_address, decoder.error)
            self.close()

    def _dispatch(self, command: RemotingCommand) -> None:
        if command.flag & RESPONSE_FLAG:  # (the flag, not the property: this path is compiled)
            future = self._pending.pop(command.opaque, None)
            if future is None:
                log.debug("response opaque=%d from %s matches no request", command.opaque, self.remote_address)
            elif not future.done():
                future.set_result(command)
        else:
            self._on_request(command, self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        reason = f"connection lost: {exc}" if exc else "connection closed"
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionClosedError(self.remote_address, reason))
        self._pending.clear()
        if not self.closed.done():
            self.closed.set_result(None)
        if self._on_close is not None:
            self._on_close(self)

    # -- sending --------------------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._transport is not None and not self._transport.is_closing()

    def send(self, command: RemotingCommand) -> None:
        """Write a command (a request we do not wait on, or a response)."""
        transport = self._transport
        if transport is None or transport.is_closing():
            raise ConnectionClosedError(self.remote_address)
        parts = encode_frame_parts(command)
        if len(parts) == 1:
            transport.write(parts[0])
        else:
            transport.writelines(parts)

    async def invoke(self, command: RemotingCommand, timeout_s: float) -> RemotingCommand:
        """Send a request and wait for its response (RemotingTimeoutError after ``timeout_s``)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[RemotingCommand] = loop.create_future()
        self._pending[command.opaque] = future
        # One timer handle per call: cheaper than ``asyncio.timeout`` on a path every request takes.
        timer = loop.call_later(timeout_s, self._expire, future, command.code, timeout_s)
        try:
            self.send(command)
            return await future
        finally:
            timer.cancel()
            self._pending.pop(command.opaque, None)

    def _expire(self, future: asyncio.Future[RemotingCommand], code: int, timeout_s: float) -> None:
        if not future.done():
            future.set_exception(RemotingTimeoutError(self.remote_address, code, timeout_s))

    def oneway(self, command: RemotingCommand) -> None:
        """Send a request with the oneway bit set; no response is expected."""
        if not command.flag & ONEWAY_FLAG:
            raise ValueError("oneway() needs a command built with oneway=True")
        self.send(command)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    def __repr__(self) -> str:
        return f"Connection({self.remote_address}, pending={len(self._pending)})"
