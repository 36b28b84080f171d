"""A blocking connection: RocketMQ frames over a plain socket, for a caller that waits for its answer on
its own thread (``SyncProducer.send``: ``rocketq.client.blocking_send``) instead of handing the call to
an event loop. The framing is the protocol's own (``encode_frame``, ``FrameDecoder``), as on the asyncio
connections; only the I/O differs.

One request at a time: the connection is not shared by threads at once (its owner makes sure). A request
that gets no answer in time closes the connection, so a late answer can never be read as the next
request's; any other failure closes it too, and the next request opens a new one.

The socket is in blocking mode and a request's time limit is the kernel's (SO_RCVTIMEO, SO_SNDTIMEO),
set only when it changes: a socket with Python's own timeout polls before every send and receive, and
sets its mode at every ``settimeout``, four system calls per request more than the two it needs.
"""

from __future__ import annotations

import socket
import struct
import time

from rocketq.protocol import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, ProtocolError, RemotingCommand, encode_frame
from rocketq.remoting.client import split_address
from rocketq.remoting.errors import ConnectionClosedError, RemotingConnectError, RemotingTimeoutError

_TIMEVAL = struct.Struct("@ll")
"""``struct timeval`` (seconds, microseconds), the value of SO_RCVTIMEO and SO_SNDTIMEO."""


class BlockingConnection:
    """Requests to ``address`` over a blocking socket, opened when the first request needs it (TCP_NODELAY).

    Thread safety: one thread at a time (the caller serialises its use)."""

    def __init__(
        self, address: str, *, connect_timeout_s: float = 3.0, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    ) -> None:
        self.address = address
        self._connect_timeout_s = connect_timeout_s
        self._max_frame_size = max_frame_size
        self._socket: socket.socket | None = None
        self._decoder = FrameDecoder(max_frame_size=max_frame_size)
        self._timeout_s = -1.0  # the socket's timeouts in force (SO_RCVTIMEO, SO_SNDTIMEO), -1 when unset

    @property
    def is_open(self) -> bool:
        return self._socket is not None

    def invoke(self, request: RemotingCommand, timeout_s: float, now: float | None = None) -> RemotingCommand:
        """Send ``request`` and wait for its answer (connecting first when closed; connect time counts).
        ``now``: ``time.monotonic()`` as the caller just read it (one clock read less per request).

        Raises:
            RemotingConnectError: the peer cannot be reached.
            RemotingTimeoutError: no answer within ``timeout_s`` (the connection is closed).
            ConnectionClosedError: the connection broke or carried a malformed frame (it is closed).
        """
        began = time.monotonic() if now is None else now
        limit_s = timeout_s
        sock = self._socket
        if sock is None:
            sock = self._connect(timeout_s)
            timeout_s -= time.monotonic() - began
            if timeout_s <= 0:
                self.close()
                raise RemotingTimeoutError(self.address, request.code, limit_s)
        opaque = request.opaque
        try:
            if timeout_s != self._timeout_s:
                self._set_timeout(sock, timeout_s)
            sock.sendall(encode_frame(request))
            while True:
                received = sock.recv_into(self._decoder.get_buffer())
                if not received:
                    raise ConnectionClosedError(self.address, "closed by the peer")
                answer = None
                for command in self._decoder.buffer_updated(received):
                    # the peer sends nothing else on this connection (its requests to the client go to the
                    # one its heartbeats came on); anything else is skipped
                    if command.is_response and command.opaque == opaque:
                        answer = command
                if answer is not None:
                    return answer
                # the answer is not complete yet (rare: it fits a read): wait only for what is left
                remaining = began + limit_s - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                self._set_timeout(sock, remaining)
        except (TimeoutError, BlockingIOError):  # BlockingIOError: a socket timeout ran out (EAGAIN)
            self.close()
            raise RemotingTimeoutError(self.address, request.code, limit_s) from None
        except ConnectionClosedError:
            self.close()
            raise
        except ProtocolError as exc:
            self.close()
            raise ConnectionClosedError(self.address, f"malformed frame from the peer: {exc}") from exc
        except OSError as exc:
            self.close()
            raise ConnectionClosedError(self.address, exc.strerror or str(exc)) from exc

    def _set_timeout(self, sock: socket.socket, timeout_s: float) -> None:
        """Make the socket's sends and receives give up after ``timeout_s`` (the kernel's own timeouts: a
        read or write that runs out fails with EAGAIN), until it is set again."""
        seconds = int(timeout_s)
        microseconds = max(int((timeout_s - seconds) * 1_000_000), 0 if seconds else 1)  # 0 would be "never"
        value = _TIMEVAL.pack(seconds, microseconds)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)
        self._timeout_s = timeout_s

    def _connect(self, timeout_s: float) -> socket.socket:
        host, port = split_address(self.address)
        timeout = min(self._connect_timeout_s, timeout_s)
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except TimeoutError:
            raise RemotingConnectError(self.address, f"timed out after {timeout:.3f}s") from None
        except OSError as exc:
            raise RemotingConnectError(self.address, exc.strerror or str(exc)) from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(None)  # blocking: the kernel's timeouts (_set_timeout) bound each call
        self._timeout_s = -1.0
        self._socket = sock
        self._decoder = FrameDecoder(max_frame_size=self._max_frame_size)
        return sock

    def close(self) -> None:
        """Close the socket (the next request opens a new one)."""
        sock, self._socket = self._socket, None
        if sock is not None:
            sock.close()
