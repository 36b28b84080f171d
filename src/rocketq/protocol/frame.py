"""Framing: turn a byte stream into RemotingCommands and back. No I/O happens here.

Frame layout (``RemotingCommand.encode`` / ``NettyDecoder`` in RocketMQ)::

    offset  size  field
    0       4     frame_length   = 4 + header_length + body_length (excludes itself)
    4       1     serialize_type (0 = JSON, 1 = ROCKETMQ)
    5       3     header_length
    8       H     header
    8+H     B     body

The size limit counts the whole frame including the 4-byte prefix, as Netty's
``LengthFieldBasedFrameDecoder`` does, and defaults to RocketMQ's 16 MiB.

The decoder owns the memory the socket is read into (``asyncio.BufferedProtocol``'s shape:
:meth:`FrameDecoder.get_buffer`, :meth:`FrameDecoder.buffer_updated`): small frames land in one
fixed buffer and are parsed from it; a large frame (a pull answer of MiBs) has its body received
into a buffer of its own, allocated once its header is in, and handed on as that buffer (a
read-only ``memoryview``) with no copy at all: no bytes object per read and no join. That buffer is
not zeroed first (``unfilled_bytearray``): the socket writes every byte of it before the body is
handed on, so zeroing it was a write pass over a pull answer of MiBs for nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import struct
from collections import deque
from collections.abc import Iterator
from typing import Any, Final

from librt.strings import BytesWriter, read_i32_be, write_i32_be

from rocketq.protocol.codes import SerializeType
from rocketq.protocol.command import Body, RemotingCommand, encode_header
from rocketq.protocol.errors import FrameTooLargeError, LocalProtocolError, ProtocolError, RemoteProtocolError
from rocketq.protocol.header_decode import decode_command

DEFAULT_MAX_FRAME_SIZE: Final = 16 * 1024 * 1024
"""RocketMQ's default ``com.rocketmq.remoting.frameMaxLength``."""

_PREFIX = struct.Struct(">iI")  # frame_length, serialize_type << 24 | header_length
_LENGTH = struct.Struct(">i")
_PREFIX_SIZE: Final = 8
_MAX_HEADER_LENGTH: Final = 0xFFFFFF
_MAX_FRAME_LENGTH_FIELD: Final = 2**31 - 1
_SERIALIZE_TYPES: Final = len(SerializeType)
"""How many serialize types there are: they are 0, 1, ... (checked below), so a frame's type byte is known
when below this (one comparison per frame, where a set's ``in`` would box and hash it)."""
if sorted(SerializeType) != list(range(_SERIALIZE_TYPES)):
    raise ImportError(f"the frame decoder expects serialize types 0..{_SERIALIZE_TYPES - 1}: {list(SerializeType)}")
RECEIVE_BUFFER: Final = 64 * 1024
"""Bytes of the buffer small frames are read into by default (a read takes at most what is free of
it): a server holds one per connection, so it is kept small there."""
LARGE_FRAME: Final = 32 * 1024
"""Frames of at least this many bytes have their body read into a buffer of its own."""


_new_bytearray: Any = getattr(ctypes.pythonapi, "PyByteArray_FromStringAndSize", None)
if _new_bytearray is not None:
    _new_bytearray.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t)
    _new_bytearray.restype = ctypes.py_object


def unfilled_bytearray(size: int) -> bytearray:
    """A ``bytearray`` of ``size`` bytes whose contents are whatever the allocator's memory held: for a
    buffer every byte of which is written before it is read. ``bytearray(size)`` zeroes its memory, a
    write pass over it before the socket's (receiving 4 MiB frames cost 8-15 % more CPU per byte with
    it; docs/spark.md, "Session 22"). CPython's ``PyByteArray_FromStringAndSize`` with no source
    leaves the bytes as allocated; elsewhere this is ``bytearray(size)``."""
    if _new_bytearray is None or size <= 0:
        return bytearray(size)
    made: bytearray = _new_bytearray(None, size)
    return made


class FrameDecoder:
    """Incremental frame decoder over its own receive buffers.

    A transport asks it where the next read goes (:meth:`get_buffer`) and tells it how many bytes
    landed there (:meth:`buffer_updated`, which returns the commands now complete): the shape of
    ``asyncio.BufferedProtocol``, so the socket is read straight into the decoder's memory. Reads of
    small frames go into one fixed buffer; a frame of at least ``LARGE_FRAME`` bytes, once its prefix
    and header are in, has its body read into buffers of its own (``body_chunk`` bytes each at most;
    None: one buffer of the body's size). A body received in one buffer becomes the command's body as
    a read-only ``memoryview`` of it, with no copy; one received in several is joined into ``bytes``.
    Small frames' bodies are ``bytes``.

    :meth:`decode` (bytes already read) and :meth:`feed` / :meth:`next_command` copy into the same
    buffers. The decoder never blocks and never touches a socket. After it raises a
    :class:`~rocketq.protocol.errors.ProtocolError` it stays failed: every later call raises again,
    and the caller should close the connection.

    Example::

        decoder = FrameDecoder()
        decoder.feed(chunk)
        for command in decoder:
            handle(command)
    """

    __slots__ = (
        "_body_chunk",
        "_buffer",
        "_chunks",
        "_end",
        "_error_raised",
        "_filled",
        "_header",
        "_keep_ext_json",
        "_max_frame_size",
        "_missing",
        "_ready",
        "_receive_buffer",
        "_serialize_type",
        "_start",
        "_view",
        "_wanted",
        "error",
    )

    def __init__(
        self,
        *,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        body_chunk: int | None = None,
        receive_buffer: int = RECEIVE_BUFFER,
        keep_ext_json: bool = False,
    ) -> None:
        """Create a decoder.

        Args:
            max_frame_size: Largest accepted frame in bytes, 4-byte prefix included.
            body_chunk: Largest buffer allocated at once for a large frame's body (at least
                ``receive_buffer``); None: the whole body at once, when its header arrives. A server
                sets it, so that a peer announcing big frames does not make it hold their size before
                the bytes come.
            receive_buffer: Bytes of the buffer small frames are read into, the most one read takes
                (at least ``LARGE_FRAME``). A client reading many answers of pulls in flight reads
                more per call with a larger one.
            keep_ext_json: JSON headers' extFields stay their JSON text until read
                (``RemotingCommand.ext_json``; ``header_decode.decode_command``): a server's, whose
                handlers read typed headers straight from it.
        """
        if max_frame_size < _PREFIX_SIZE:
            raise ValueError(f"max_frame_size must be at least {_PREFIX_SIZE}, got {max_frame_size}")
        if receive_buffer < LARGE_FRAME:
            raise ValueError(f"receive_buffer must be at least {LARGE_FRAME}, got {receive_buffer}")
        if body_chunk is not None and body_chunk < receive_buffer:
            raise ValueError(f"body_chunk must be at least {receive_buffer}, got {body_chunk}")
        self._max_frame_size = max_frame_size
        self._body_chunk = body_chunk
        self._receive_buffer = receive_buffer
        self._keep_ext_json = keep_ext_json
        self._buffer = bytearray(receive_buffer)  # reads of small frames; unparsed bytes are [_start, _end)
        self._view = memoryview(self._buffer)  # (kept with it: get_buffer makes no view per read)
        self._start = 0
        self._end = 0
        self._wanted = 4  # bytes from ``_start`` the next parse needs (a partial frame's, once known)
        # a large frame whose body is being received: its serialize type and header, the buffers of its
        # body, the bytes in the last one, and the body's bytes still to come (0: no such frame)
        self._serialize_type = 0
        self._header = b""
        self._chunks: list[bytearray] = []
        self._filled = 0
        self._missing = 0
        self._ready: deque[RemotingCommand] = deque()  # decoded by ``feed``, for ``next_command``
        self._error_raised = False
        self.error: ProtocolError | None = None  # the malformed frame met, once there was one

    @property
    def max_frame_size(self) -> int:
        """Largest accepted frame in bytes, prefix included."""
        return self._max_frame_size

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a command (a partial frame)."""
        if self._missing:
            received = sum(len(chunk) for chunk in self._chunks) - len(self._chunks[-1]) + self._filled
            return _PREFIX_SIZE + len(self._header) + received
        return self._end - self._start

    @property
    def failed(self) -> bool:
        """True once the decoder has met a malformed frame."""
        return self.error is not None

    def get_buffer(self) -> memoryview:
        """Where the next received bytes go (``asyncio.BufferedProtocol.get_buffer``): never empty, and
        never past the end of a large frame's body."""
        if self._missing:
            chunk = self._chunks[-1]
            if self._filled == len(chunk):
                chunk = unfilled_bytearray(min(self._missing, self._body_chunk or self._missing))
                self._chunks.append(chunk)
                self._filled = 0
            return memoryview(chunk)[self._filled :]
        end = self._end
        return self._view[end:] if end else self._view  # (the usual read: after whole frames, the whole buffer)

    def buffer_updated(self, size: int) -> list[RemotingCommand]:
        """``size`` bytes were written at the start of the last ``get_buffer``: every command now
        complete, in order. A malformed frame that follows complete ones does not lose them: they are
        returned and ``failed`` is set (the next call raises).

        Raises:
            FrameTooLargeError: A frame announces more than ``max_frame_size`` bytes.
            RemoteProtocolError: The stream is malformed, or the decoder failed earlier.
        """
        if self.error is not None:
            self._raise_if_failed()
        if self._missing:
            self._filled += size
            self._missing -= size
            return [self._finish_large()] if not self._missing else []
        start = self._start
        end = self._end = self._end + size
        if end - start < self._wanted:  # the partial frame is still incomplete
            return []
        # the unparsed bytes as one ``bytes`` (a copy of what is mostly one read, in the CPU's cache): the
        # frames' headers and bodies are then slices of it, one object each, cheaper than from a view. The
        # buffer's slice copied again to bytes costs about 60 % of a view, its slice and ``tobytes``
        # (~2,000 instructions a read instead of ~3,400; the copies are of a few hundred bytes)
        data = bytes(self._buffer[start:end])
        commands: list[RemotingCommand] = []
        # every complete frame at the start of ``data``, parsed in this one loop (no call or tuple per frame)
        pos, available = 0, end - start
        keep_ext_json = self._keep_ext_json
        try:
            while available - pos >= 4:
                frame_length = read_i32_be(data, pos)
                if frame_length < 4:
                    raise RemoteProtocolError(f"invalid frame length {frame_length}")
                frame_end = pos + 4 + frame_length
                if frame_length + 4 > self._max_frame_size:
                    raise FrameTooLargeError(frame_length + 4, self._max_frame_size)
                if available - pos < _PREFIX_SIZE:
                    break
                # the second word is checked before waiting for the rest, so garbage fails fast
                serialize_type = data[pos + 4]
                body_start = pos + _PREFIX_SIZE + (read_i32_be(data, pos + 4) & _MAX_HEADER_LENGTH)
                if serialize_type >= _SERIALIZE_TYPES:
                    raise RemoteProtocolError(f"unknown serialize type {serialize_type}")
                if body_start > frame_end:
                    raise RemoteProtocolError(
                        f"header length {body_start - pos - _PREFIX_SIZE} exceeds frame length {frame_length}"
                    )
                if frame_end > available:
                    break
                commands.append(
                    decode_command(
                        serialize_type, data[pos + _PREFIX_SIZE : body_start], data[body_start:frame_end], keep_ext_json
                    )
                )
                pos = frame_end
        except ProtocolError as exc:
            self.error = exc
            if not commands:
                raise
            self._start = self._end = 0  # (what follows a malformed frame is not read)
            return commands
        if pos == available:  # the usual read: whole frames only
            self._start = self._end = 0
            self._wanted = 4
            if len(self._buffer) > self._receive_buffer:  # (grown for a large header: back to the usual size)
                self._buffer = bytearray(self._receive_buffer)
                self._view = memoryview(self._buffer)
        else:
            self._start = start + pos
            self._hold_partial()
        return commands

    def decode(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        """The commands completed by ``data`` (bytes read elsewhere), copied into the receive buffers:
        ``buffer_updated`` for a transport that reads into its own memory.

        Raises:
            FrameTooLargeError, RemoteProtocolError: As ``buffer_updated``, when no command came before.
        """
        if self.error is not None:
            self._raise_if_failed()
        commands: list[RemotingCommand] = []
        with memoryview(data) as view:
            source = view.cast("B") if view.format != "B" or view.ndim != 1 else view
            at, end = 0, source.nbytes
            while at < end:
                room = self.get_buffer()
                size = min(len(room), end - at)
                room[:size] = source[at : at + size]
                at += size
                try:
                    commands.extend(self.buffer_updated(size))
                except ProtocolError:
                    if not commands:
                        raise
                if self.error is not None:
                    break
        return commands

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append received bytes; ``next_command`` returns the commands they complete.

        Raises:
            RemoteProtocolError: The decoder failed earlier.
        """
        self._raise_if_failed()
        with contextlib.suppress(ProtocolError):  # raised by next_command once the commands before it are taken
            self._ready.extend(self.decode(data))

    def next_command(self) -> RemotingCommand | None:
        """Return the next complete command fed, or None if more bytes are needed.

        Raises:
            FrameTooLargeError: A frame announces more than ``max_frame_size`` bytes.
            RemoteProtocolError: The stream is malformed, or the decoder failed earlier.
        """
        if self._ready:
            return self._ready.popleft()
        if self.error is not None and not self._error_raised:
            self._error_raised = True
            raise self.error
        self._raise_if_failed()
        return None

    def __iter__(self) -> Iterator[RemotingCommand]:
        """Yield every complete command currently buffered."""
        while (command := self.next_command()) is not None:
            yield command

    def _hold_partial(self) -> None:
        """After a read's complete frames, when bytes are left: keep the incomplete frame they start where
        the next reads complete it. A large frame with its header in goes on into buffers of its own."""
        buffer, start, end = self._buffer, self._start, self._end
        available = end - start
        needed = 4 if available < 4 else _PREFIX_SIZE  # (the parse checks the length, then the second word)
        if available >= _PREFIX_SIZE:  # (checked by buffer_updated's parse)
            frame_size = _LENGTH.unpack_from(buffer, start)[0] + 4
            body_at = _PREFIX_SIZE + (_PREFIX.unpack_from(buffer, start)[1] & _MAX_HEADER_LENGTH)
            if frame_size < LARGE_FRAME:
                needed = frame_size
            elif available >= body_at:
                self._start_large(start + body_at, frame_size - body_at)
                return
            else:
                needed = body_at
        if needed > len(buffer):
            grown = bytearray(needed)
            grown[:available] = buffer[start:end]
            self._buffer = grown
            self._view = memoryview(grown)
        elif start:
            buffer[:available] = buffer[start:end]  # (same size: allowed while a read's view exists)
        self._start, self._end = 0, available
        self._wanted = needed

    def _start_large(self, body_at: int, body_size: int) -> None:
        """Receive the rest of the frame at ``_start`` (header complete) into buffers of its own."""
        buffer = self._buffer
        self._serialize_type = buffer[self._start + 4]
        self._header = bytes(buffer[self._start + _PREFIX_SIZE : body_at])
        have = self._end - body_at
        chunk = unfilled_bytearray(min(body_size, self._body_chunk or body_size))
        chunk[:have] = memoryview(buffer)[body_at : self._end]
        self._chunks = [chunk]
        self._filled = have
        self._missing = body_size - have
        self._start = self._end = 0
        self._wanted = 4

    def _finish_large(self) -> RemotingCommand:
        chunks = self._chunks
        body: Body = memoryview(chunks[0]).toreadonly() if len(chunks) == 1 else b"".join(chunks)
        header = self._header
        self._chunks, self._header, self._filled = [], b"", 0
        try:
            return decode_command(self._serialize_type, header, body, self._keep_ext_json)
        except ProtocolError as exc:
            self.error = exc
            raise

    def _raise_if_failed(self) -> None:
        if self.error is not None:
            raise RemoteProtocolError(f"frame decoder failed earlier: {self.error}") from self.error


def encode_frame_parts(cmd: RemotingCommand) -> list[Body]:
    """Encode ``cmd`` as buffers to write in order, without copying the body.

    Returns:
        ``[prefix_and_header]`` or ``[prefix_and_header, body]``; the body is the
        command's own object (``bytes`` or ``memoryview``), suitable for
        ``writelines`` or ``socket.sendmsg``. A command with ``body_parts`` has
        them after the prefix and header instead, each its own object.

    Raises:
        LocalProtocolError: The header or frame is too large for the wire format, or the
            body is not a contiguous buffer.
    """
    header = encode_header(cmd)
    if len(header) > _MAX_HEADER_LENGTH:
        raise LocalProtocolError(f"header of {len(header)} bytes exceeds {_MAX_HEADER_LENGTH} bytes")
    parts = cmd.body_parts
    if parts is not None:
        return _frame_of_parts(cmd, header, parts)
    body = cmd.body
    if isinstance(body, memoryview):
        if not body.c_contiguous:
            raise LocalProtocolError("body memoryview must be C-contiguous")
        body_size = body.nbytes
        if body.format != "B" or body.ndim != 1:
            body = body.cast("B")
    else:
        body_size = len(body)
    frame_length = 4 + len(header) + body_size
    if frame_length > _MAX_FRAME_LENGTH_FIELD:
        raise LocalProtocolError(f"frame of {frame_length} bytes does not fit a 32-bit length")
    first = BytesWriter()  # (compiled: each field a store into the buffer, no struct call, no concatenation)
    write_i32_be(first, frame_length)
    write_i32_be(first, (int(cmd.serialize_type) << 24) | len(header))
    first.write(header)
    return [first.getvalue(), body] if body_size else [first.getvalue()]


def _frame_of_parts(cmd: RemotingCommand, header: bytes, parts: list[memoryview]) -> list[Body]:
    """``encode_frame_parts`` of a command whose body is ``parts`` (1-D byte views, as the store makes)."""
    body_size = 0
    for part in parts:
        if part.ndim != 1 or part.itemsize != 1 or not part.c_contiguous:
            raise LocalProtocolError("body parts must be contiguous byte views")
        body_size += part.nbytes
    frame_length = 4 + len(header) + body_size
    if frame_length > _MAX_FRAME_LENGTH_FIELD:
        raise LocalProtocolError(f"frame of {frame_length} bytes does not fit a 32-bit length")
    first: Body = _PREFIX.pack(frame_length, (int(cmd.serialize_type) << 24) | len(header)) + header
    return [first, *parts]


def encode_frame(cmd: RemotingCommand) -> bytes:
    """Encode ``cmd`` as one contiguous frame.

    Raises:
        LocalProtocolError: See :func:`encode_frame_parts`.
    """
    return b"".join(encode_frame_parts(cmd))
