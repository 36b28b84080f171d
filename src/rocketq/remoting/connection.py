"""One remoting connection: frames over an asyncio transport, an opaque -> Future table.

Responses may arrive in any order (a broker answers a long-polling pull after later requests), so
requests are matched to responses by opaque. Requests that arrive on the connection (server side:
every request; client side: NOTIFY_CONSUMER_IDS_CHANGED, CHECK_TRANSACTION_STATE, ...) go to the
connection's ``RequestSink``, which owns replying: the server itself (a native call in a compiled build),
or a client's callback wrapped once as one (``CallbackSink``).

A read is handled in one pass (``buffer_updated``): the decoder parses every complete frame of it, and
one loop hands each to its taker, a response to the future (and reader) of its request, a request to
the sink, with the answers it makes gathered into one write (``send``). What only a server needs (its
limits, the partial-frame bookkeeping) is one branch of that loop, taken when a limit is reached or a
frame is partial.

A request may be sent with a reader (``invoke(..., read=...)``): the reader turns the response into
the caller's result in the read that brought it, before the waiting task resumes and ahead of every
other task that read (or an earlier read of the same loop turn) made ready. A push consumer hands a
pulled batch to its listener this way (docs/consume-path.md).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar, cast, final, overload

from rocketq.protocol import (
    ONEWAY_FLAG,
    RESPONSE_FLAG,
    Body,
    FrameDecoder,
    ProtocolError,
    RemotingCommand,
    encode_frame_parts,
)
from rocketq.remoting.errors import ConnectionClosedError, RemotingTimeoutError
from rocketq.remoting.limits import RequestBytesBudget, ServerLimits

log = logging.getLogger(__name__)

CORK_LIMIT: Final = 64 * 1024
"""Bytes of gathered writes (see ``Connection.send``) that are written at once rather than gathered
further: large answers go out without waiting for the rest of the read, and the write buffer's
high-water mark still sees them as they come."""

SERVER_BODY_CHUNK: Final = 256 * 1024
"""A server connection's buffers for a large request's body are allocated this many bytes at a time."""

CLIENT_RECEIVE_BUFFER: Final = 256 * 1024
"""A client connection's read buffer for small frames (a server's is ``frame.RECEIVE_BUFFER``, 64 KiB,
one per connection): the answers of a consumer's pulls in flight on one connection come in together,
and a drain of 100 B messages ran about 10 % faster reading up to 256 KiB per call than 64 KiB."""

GATHER_WINDOW: Final = 0.0005
"""Seconds (the loop's clock) after a request written at once, others in flight, within which the next
such request starts a gathering (see ``Connection.request``): under uvloop, whose clock counts whole
milliseconds, the same millisecond."""

_opaques = itertools.count(1)

T = TypeVar("T")

RequestHandler = Callable[[RemotingCommand, "Connection"], Awaitable[RemotingCommand | None]]
"""Handles one request; returns the response, or None when it replies later (or never: oneway).

A server runs its handlers eagerly (``tasks.start_eagerly``): until its first ``await`` that suspends, a
handler has no Task of its own, so what needs one (``asyncio.timeout``) must come after such a wait."""


def next_opaque() -> int:
    return next(_opaques) & 0x7FFFFFFF


DEADLINE_SLACK: Final = 0.001
"""A request whose deadline is this close (s) when its connection's timer fires has expired: the loop's
clock and its timers count whole milliseconds, so a timer may fire just before the deadline it was set
for."""


@final
class Outstanding:
    """A request waiting for its response: the future it completes (with ``read(response)`` when it has a
    reader, see ``Connection.invoke``), and when (the loop's clock) it fails with
    ``RemotingTimeoutError(code, timeout_s)`` instead."""

    def __init__(
        self,
        future: asyncio.Future[Any],
        deadline: float,
        code: int,
        timeout_s: float,
        read: Callable[[RemotingCommand], Any] | None,
    ) -> None:
        self.future = future
        self.deadline = deadline
        self.code = code
        self.timeout_s = timeout_s
        self.read = read


class RequestSink:
    """What a server's connections hand each request they read to (``RemotingServer``): a compiled
    build calls it natively, no Python-level call per request as a callback costs."""

    def on_request(self, request: RemotingCommand, connection: Connection) -> None:
        """Serve ``request``, read on ``connection`` (it owns replying)."""
        raise NotImplementedError


@final
class CallbackSink(RequestSink):
    """A client's request callback as its connection's ``RequestSink``: a connection makes the same one
    call per request whoever takes them."""

    def __init__(self, callback: Callable[[RemotingCommand, Connection], None]) -> None:
        self._callback = callback

    def on_request(self, request: RemotingCommand, connection: Connection) -> None:
        """Hand ``request`` to the callback."""
        self._callback(request, connection)


class Connection(asyncio.BufferedProtocol):
    """Thread safety: use from its event loop only.

    A server's connections get ``limits`` and the process's ``budget`` (``rocketq.remoting.limits``):
    while their unsent answers are over the high-water mark, or their partial frame is over the shared
    budget, they read nothing more and start none of the requests they hold. A client's connections
    have no limits: pausing their reading could keep the answers they wait for from arriving."""

    def __init__(
        self,
        on_request: Callable[[RemotingCommand, Connection], None] | RequestSink,
        *,
        max_frame_size: int,
        on_close: Callable[[Connection], None] | None = None,
        limits: ServerLimits | None = None,
        budget: RequestBytesBudget | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # (a server's sink, called natively; a client's callback, wrapped)
        self._sink = on_request if isinstance(on_request, RequestSink) else CallbackSink(on_request)
        self._on_close = on_close
        # a server takes a large request's body in parts as they come (a peer announcing big frames does not
        # make it hold their size first); a client receives a large answer into one buffer, its body.
        # Both keep JSON extFields as their text (no dict made per frame): the broker's send and pull
        # handlers decode their typed headers straight from it, and so do a client's readers of a send's
        # and a pull's answer (rocketq.client.answer_fields); any other reader gets the dict when it asks
        if limits is not None:
            self._decoder = FrameDecoder(
                max_frame_size=max_frame_size, body_chunk=SERVER_BODY_CHUNK, keep_ext_json=True
            )
        else:
            self._decoder = FrameDecoder(
                max_frame_size=max_frame_size, receive_buffer=CLIENT_RECEIVE_BUFFER, keep_ext_json=True
            )
        self._pending: dict[int, Outstanding] = {}  # by opaque; see request
        self._transport: asyncio.Transport | None = None
        # the loop it is used from, kept: asyncio.get_running_loop() makes a getpid system call (its
        # fork check, Python 3.11), which every request would pay
        self._loop = asyncio.get_running_loop()
        self.closed: asyncio.Future[None] = self._loop.create_future()
        self.remote_address = "?"
        self._clock = clock
        self.last_activity = clock()
        self.attributes: dict[str, object] = {}  # per-connection state for the owner (client ids ...)
        self._limits = limits
        self._budget = budget
        self._held: deque[RemotingCommand] = deque()  # requests read but not started yet (see _stopped)
        self._answers_backed_up = False  # unsent answers over the high-water mark
        self._working = 0  # requests being handled on the server's worker threads
        self._max_working = limits.max_worker_requests if limits is not None else 0  # (0: no limit)
        self._stopped = False  # answers backed up or max_working reached: requests read are held
        self._over_budget = False  # the partial frame is over the process's request-bytes budget
        self.partial_frame_since: float | None = None  # when the first byte of an incomplete frame came
        self._budget_reported = 0  # the bytes this connection last told its budget it holds
        self.backpressure_episodes = 0  # times the answers backed up
        self._corking = False  # writes are gathered into _corked for one transport call (see send)
        self._corked: list[Body] = []  # (one list, reused: emptied when written)
        self._corked_bytes = 0
        self._direct_at = -math.inf  # (the loop's clock) when a request was last written at once, others in flight
        self._timer: asyncio.TimerHandle | None = None  # the requests' one timer (see request)
        self._timer_at = math.inf  # when it fires (the loop's clock), inf when not armed

    # -- asyncio.Protocol -----------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but they have the same methods
        self._transport = cast(asyncio.Transport, transport)
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and len(peer) >= 2:
            self.remote_address = f"{peer[0]}:{peer[1]}"
        if self._limits is not None:
            self._transport.set_write_buffer_limits(
                high=self._limits.write_buffer_high_water, low=self._limits.write_buffer_low_water
            )

    def get_buffer(self, sizehint: int) -> memoryview:
        """Where the transport reads to: the frame decoder's memory (no bytes object per read)."""
        return self._decoder.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        """``nbytes`` landed in ``get_buffer``: take every frame they complete, in order (see the module
        docstring), with this read's answers written together at its end."""
        limits = self._limits
        if limits is not None:  # (a server's idle check; a client's connections are not checked)
            self.last_activity = self._clock()
        decoder = self._decoder
        try:
            commands = decoder.buffer_updated(nbytes)
        except ProtocolError as exc:
            log.warning("closing connection from %s: %s", self.remote_address, exc)
            self.close()
            return
        if commands:
            self._corking = True  # the answers of this read's requests leave in one write
            try:
                held = self._held
                for command in commands:
                    if command.flag & RESPONSE_FLAG:  # (the flag, not the property: this path is compiled)
                        outstanding = self._pending.pop(command.opaque, None)
                        if outstanding is None:
                            log.debug(
                                "response opaque=%d from %s matches no request", command.opaque, self.remote_address
                            )
                            continue
                        future = outstanding.future
                        if future.done():  # (a request that timed out or was cancelled is not read)
                            continue
                        read = outstanding.read
                        if read is None:
                            future.set_result(command)
                        else:
                            try:
                                future.set_result(read(command))
                            except Exception as exc:  # the caller's to handle, as the caller's own code
                                future.set_exception(exc)
                    elif not (self._stopped or held):
                        self._sink.on_request(command, self)
                    else:  # (a server whose answers are backed up or whose workers are busy)
                        held.append(command)
                        self._update_reading()
            finally:
                self._uncork()
        if limits is not None:
            buffered = decoder.buffered
            if buffered or self.partial_frame_since is not None:  # (the usual read: whole frames, none before)
                self._account_partial_frame(buffered)
        if decoder.error is not None:  # a malformed frame after these: they were served, now close
            log.warning("closing connection from %s: %s", self.remote_address, decoder.error)
            self.close()

    # -- limits (server side) -------------------------------------------------------------------------

    def _update_stopped(self) -> None:
        """``_stopped``: whether requests read now are held (answers backed up, or ``max_worker_requests``
        of them on the server's worker threads), kept as one flag the read loop checks."""
        self._stopped = self._answers_backed_up or 0 < self._max_working <= self._working

    def work_started(self) -> None:
        """The server handles one of this connection's requests on a worker thread (its answer is made
        off the loop, so the write buffer cannot tell how many answers are coming)."""
        self._working += 1
        self._update_stopped()

    def work_finished(self) -> None:
        self._working -= 1
        self._update_stopped()
        if self._held and not self._stopped:
            self._serve_held()

    def _serve_held(self) -> None:
        held = self._held
        while held and not self._stopped and self.is_open:
            self._sink.on_request(held.popleft(), self)
        self._update_reading()

    def _account_partial_frame(self, buffered: int) -> None:
        """A server's read left ``buffered`` bytes of a partial frame, or completed the one it had: when
        it began (the frame timeout) and the bytes the process's budget counts."""
        if buffered == 0:
            self.partial_frame_since = None
        elif self.partial_frame_since is None:
            self.partial_frame_since = self.last_activity
        if self._budget is None or (buffered == 0 and self._budget_reported == 0):
            return  # (the usual read: nothing held before or after, nothing for the budget to change)
        self._budget_reported = buffered
        within = self._budget.hold(self, buffered, self._budget_freed)
        if not within and not self._over_budget:
            self._over_budget = True
            log.warning(
                "connection from %s: %d bytes of partial request frames held in this process (limit %d); "
                "not reading from it until other frames complete",
                self.remote_address,
                self._budget.used,
                self._budget.limit,
            )
            self._update_reading()

    def _budget_freed(self) -> None:
        self._over_budget = False
        self._update_reading()

    def _update_reading(self) -> None:
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        if self._answers_backed_up or self._over_budget or self._held:
            transport.pause_reading()
        else:
            transport.resume_reading()

    def pause_writing(self) -> None:
        """The transport's unsent bytes passed the high-water mark (server side: stop serving)."""
        if self._limits is None or self._answers_backed_up:
            return
        self._answers_backed_up = True
        self._update_stopped()
        self.backpressure_episodes += 1
        log.log(
            logging.INFO if self.backpressure_episodes == 1 else logging.DEBUG,
            "connection from %s does not read its answers (%d bytes unsent): serving it paused until they drain",
            self.remote_address,
            self.unsent_bytes,
        )
        self._update_reading()

    def resume_writing(self) -> None:
        """The unsent bytes drained below the low-water mark: serve the held requests, read again."""
        if not self._answers_backed_up:
            return
        self._answers_backed_up = False
        self._update_stopped()
        self._serve_held()

    @property
    def unsent_bytes(self) -> int:
        """Bytes written to this connection that the peer has not taken yet."""
        transport = self._transport
        return transport.get_write_buffer_size() if transport is not None else 0

    @property
    def pending_requests(self) -> int:
        """Requests sent on this connection whose responses have not come yet."""
        return len(self._pending)

    @property
    def serving_paused(self) -> bool:
        """True while this connection's unsent answers are over the high-water mark."""
        return self._answers_backed_up

    @property
    def held_requests(self) -> int:
        """Requests read but not started because the connection's answers are backed up."""
        return len(self._held)

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        self._held.clear()
        if self._budget is not None:
            self._budget.release(self)
            self._budget_reported = 0
        reason = f"connection lost: {exc}" if exc else "connection closed"
        for outstanding in self._pending.values():
            future = outstanding.future
            if not future.done():
                future.set_exception(ConnectionClosedError(self.remote_address, reason))
        self._pending.clear()
        self._disarm()
        if not self.closed.done():
            self.closed.set_result(None)
        if self._on_close is not None:
            self._on_close(self)

    # -- sending --------------------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self._transport is not None and not self._transport.is_closing()

    def send(self, command: RemotingCommand) -> None:
        """Write a command (a request we do not wait on, or a response).

        While the connection gathers its writes (``_corking``), the frame joins them instead: a server
        answers the requests of one read, and a client sends a burst of requests made while others are
        in flight (``request``), with one write call (one system call instead of one per frame)."""
        self.send_frame(encode_frame_parts(command))

    def send_frame(self, parts: list[Body], at_once: bool = False) -> None:
        """``send`` of a frame already encoded as ``encode_frame_parts`` would (a held pull's answer): its
        parts are ``bytes`` or 1-D byte views. ``at_once``: written now even while the connection gathers
        its writes (with what was gathered before it, in order): a held pull woken by a send on the same
        connection (one client's producer and consumer) leaves before the rest of the send's work."""
        transport = self._transport
        if self._corking:  # (the transport is checked once, when the gathered writes leave: _uncork)
            if transport is None:
                raise ConnectionClosedError(self.remote_address)
            corked = self._corked
            corked.extend(parts)
            size = self._corked_bytes
            for part in parts:
                size += len(part)  # (bytes, or 1-D byte views: encode_frame_parts casts them)
            self._corked_bytes = size
            if (at_once or size >= CORK_LIMIT) and not transport.is_closing():
                self._write_corked(transport, corked)
        elif transport is None or transport.is_closing():
            raise ConnectionClosedError(self.remote_address)
        elif len(parts) == 1:
            transport.write(parts[0])
        else:
            transport.writelines(parts)

    def _uncork(self) -> None:
        """Write what was gathered while ``_corking``, in one transport call, and write directly again."""
        self._corking = False
        corked = self._corked
        if corked:
            transport = self._transport
            if transport is not None and not transport.is_closing():
                self._write_corked(transport, corked)
            else:  # (lost meanwhile: nothing to write them to)
                corked.clear()
                self._corked_bytes = 0

    def _write_corked(self, transport: asyncio.Transport, corked: list[Body]) -> None:
        if len(corked) == 1:
            transport.write(corked[0])
        else:
            transport.writelines(corked)
        corked.clear()
        self._corked_bytes = 0

    @overload
    async def invoke(self, command: RemotingCommand, timeout_s: float) -> RemotingCommand: ...

    @overload
    async def invoke(self, command: RemotingCommand, timeout_s: float, read: Callable[[RemotingCommand], T]) -> T: ...

    async def invoke(
        self, command: RemotingCommand, timeout_s: float, read: Callable[[RemotingCommand], Any] | None = None
    ) -> Any:
        """Send a request and wait for its response (RemotingTimeoutError after ``timeout_s``): ``request``
        awaited, its entry dropped when the wait is cancelled.

        With ``read``, the result is ``read(response)`` (or what it raised), called in the read that
        brought the response (``buffer_updated``), before this coroutine resumes: what ``read`` does
        is not queued behind other tasks the loop has ready. It is not called for a response that comes
        after the timeout or a cancellation, and must not wait on anything."""
        opaque = command.opaque
        future = self.request(command, timeout_s, read)
        try:
            return await future
        except asyncio.CancelledError:
            self._pending.pop(opaque, None)
            raise

    def request(
        self, command: RemotingCommand, timeout_s: float, read: Callable[[RemotingCommand], Any] | None = None
    ) -> asyncio.Future[Any]:
        """Send a request; returns the future of its response (``read(response)`` with ``read``, as for
        ``invoke``), which fails with RemotingTimeoutError after ``timeout_s`` or ConnectionClosedError
        when the connection is lost first. Raises ConnectionClosedError when it is closed already.

        A caller that awaits the future itself (no coroutine of ``invoke`` in between) and is cancelled
        leaves the request's entry until its response or its deadline, whichever comes first.

        One timer per connection, not one per request: it is armed for the earliest deadline of the
        requests in flight (a request only re-arms it when its own deadline comes earlier, which a
        request with the usual timeout, made after the others, never does). When it fires it fails the
        requests past their deadline, drops those whose waiter is gone and arms itself for the next."""
        loop = self._loop
        now = loop.time()
        if self._pending and not self._corking:
            # Others are in flight, so their answers wake this loop anyway. A request made just after
            # another that was written at once (within GATHER_WINDOW: a burst) starts a gathering: it
            # and the requests made until the loop's next turn leave together, in one write. A lone
            # one (a send while a pull is held on the connection) is not kept waiting for that turn.
            if now - self._direct_at < GATHER_WINDOW:
                self._corking = True
                loop.call_soon(self._uncork)
            else:
                self._direct_at = now
        self.send(command)  # (first: a request that could not be written is not waited for)
        if self._transport is None:  # lost while writing it: nothing would answer or fail its future
            raise ConnectionClosedError(self.remote_address, "connection lost while writing the request")
        future: asyncio.Future[Any] = loop.create_future()
        opaque = command.opaque
        deadline = now + timeout_s
        self._pending[opaque] = Outstanding(future, deadline, command.code, timeout_s, read)
        if deadline < self._timer_at:
            self._arm(deadline)
        return future

    def _arm(self, deadline: float) -> None:
        timer = self._timer
        if timer is not None:
            timer.cancel()
        self._timer = self._loop.call_at(deadline, self._expire)
        self._timer_at = deadline

    def _disarm(self) -> None:
        timer = self._timer
        if timer is not None:
            timer.cancel()
        self._timer = None
        self._timer_at = math.inf

    def _expire(self) -> None:
        """The timer fired: fail the requests past their deadline (RemotingTimeoutError), drop those
        whose waiter is gone, and arm the timer for the earliest deadline left."""
        self._timer = None
        self._timer_at = math.inf
        pending = self._pending
        now = self._loop.time() + DEADLINE_SLACK
        ended: list[int] = []
        earliest = math.inf
        for opaque, outstanding in pending.items():
            deadline = outstanding.deadline
            if deadline <= now or outstanding.future.done():
                ended.append(opaque)
            elif deadline < earliest:
                earliest = deadline
        for opaque in ended:
            outstanding = pending.pop(opaque)
            future = outstanding.future
            if not future.done():
                future.set_exception(RemotingTimeoutError(self.remote_address, outstanding.code, outstanding.timeout_s))
        if earliest != math.inf and self.is_open:
            self._arm(earliest)

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
