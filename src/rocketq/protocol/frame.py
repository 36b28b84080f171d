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

The decoder keeps one ``bytearray`` and a read index. Bytes are appended on
:meth:`FrameDecoder.feed` and consumed frame by frame; the consumed prefix is dropped
only when it is large, so feeding byte by byte or in huge chunks stays linear.
:meth:`FrameDecoder.decode` parses a read that starts on a frame boundary straight from
its ``bytes`` and buffers only an incomplete tail. A large frame that arrives over several
reads (a pull answer of 256 KiB and more) is kept as the reads themselves and its body
joined once when the last one arrives: one copy of each byte instead of two (appended to
the buffer, then copied out of it).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Final

from rocketq.protocol.codes import SerializeType
from rocketq.protocol.command import Body, RemotingCommand, decode_command, encode_header
from rocketq.protocol.errors import FrameTooLargeError, LocalProtocolError, ProtocolError, RemoteProtocolError

DEFAULT_MAX_FRAME_SIZE: Final = 16 * 1024 * 1024
"""RocketMQ's default ``com.rocketmq.remoting.frameMaxLength``."""

_PREFIX = struct.Struct(">iI")  # frame_length, serialize_type << 24 | header_length
_LENGTH = struct.Struct(">i")
_PREFIX_SIZE: Final = 8
_MAX_HEADER_LENGTH: Final = 0xFFFFFF
_MAX_FRAME_LENGTH_FIELD: Final = 2**31 - 1
_KNOWN_SERIALIZE_TYPES: Final = frozenset(int(t) for t in SerializeType)
# Drop the consumed prefix of the buffer once it is at least this big and at least half
# of the buffer: amortised O(1) per byte, and no copying for the common small frames.
_COMPACT_THRESHOLD: Final = 64 * 1024
# A frame at least this big whose prefix and header came in one read is assembled from the reads.
_PIECEWISE_MIN_FRAME: Final = 64 * 1024


class FrameDecoder:
    """Incremental frame decoder.

    Feed it bytes as they arrive and pull commands out. It never blocks and never
    touches a socket. After it raises a :class:`~rocketq.protocol.errors.ProtocolError`
    it stays failed: every later call raises again, and the caller should close the
    connection.

    Example::

        decoder = FrameDecoder()
        decoder.feed(chunk)
        for command in decoder:
            handle(command)
    """

    __slots__ = ("_buffer", "_frame_size", "_max_frame_size", "_pieces", "_pieces_size", "_pos", "error")

    def __init__(self, *, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        """Create a decoder.

        Args:
            max_frame_size: Largest accepted frame in bytes, 4-byte prefix included.
        """
        if max_frame_size < _PREFIX_SIZE:
            raise ValueError(f"max_frame_size must be at least {_PREFIX_SIZE}, got {max_frame_size}")
        self._max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._pos = 0
        # a large frame being assembled from reads: the reads (the first from the frame's start), their
        # bytes, and the frame's size; empty when the frame, if any, is in ``_buffer``
        self._pieces: list[memoryview] = []
        self._pieces_size = 0
        self._frame_size = 0
        self.error: ProtocolError | None = None  # the malformed frame met, once there was one

    @property
    def max_frame_size(self) -> int:
        """Largest accepted frame in bytes, prefix included."""
        return self._max_frame_size

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a command (a partial frame)."""
        return len(self._buffer) - self._pos + self._pieces_size

    @property
    def failed(self) -> bool:
        """True once the decoder has met a malformed frame."""
        return self.error is not None

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append received bytes.

        Raises:
            RemoteProtocolError: The decoder failed earlier.
        """
        self._raise_if_failed()
        self._unpiece()
        self._buffer += data

    def next_command(self) -> RemotingCommand | None:
        """Return the next complete command, or None if more bytes are needed.

        Raises:
            FrameTooLargeError: A frame announces more than ``max_frame_size`` bytes.
            RemoteProtocolError: The stream is malformed, or the decoder failed earlier.
        """
        self._raise_if_failed()
        self._unpiece()
        try:
            parsed = self._parse_at(self._buffer, self._pos)
        except ProtocolError as exc:
            self.error = exc
            raise
        if parsed is None:
            return None
        command, self._pos = parsed
        self._compact()
        return command

    def decode(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        """``feed(data)``, then every command now complete, in order: a transport's one call per read.

        When nothing partial is buffered (the usual case) the frames are parsed from ``data`` itself,
        and only an incomplete tail is kept. A malformed frame that follows complete ones does not
        lose them: they are returned and ``failed`` is set (the next call raises).

        Raises:
            FrameTooLargeError, RemoteProtocolError: As ``next_command``, when no command came before.
        """
        if self.error is not None:
            self._raise_if_failed()
        if self._pieces:
            if type(data) is not bytes:
                self._unpiece()
            else:
                return self._add_piece(data)
        if self._pos == len(self._buffer) and type(data) is bytes:
            commands, used = self._parse_all(data, 0)
            if used < len(data) and self.error is None:
                self._buffer.clear()
                self._pos = 0
                tail = memoryview(data)[used:]
                if not self._start_pieces(tail):
                    self._buffer += tail
            return commands
        self._buffer += data
        commands, self._pos = self._parse_all(self._buffer, self._pos)
        self._compact()
        return commands

    def __iter__(self) -> Iterator[RemotingCommand]:
        """Yield every complete command currently buffered."""
        while (command := self.next_command()) is not None:
            yield command

    def _start_pieces(self, tail: memoryview) -> bool:
        """Keep ``tail`` (an incomplete frame at its start) as the first read of a piecewise frame when
        the frame is large and its prefix and header are all here (``_parse_at`` checked them)."""
        if len(tail) < _PREFIX_SIZE:
            return False
        frame_size = _LENGTH.unpack_from(tail, 0)[0] + 4
        header_length = _PREFIX.unpack_from(tail, 0)[1] & _MAX_HEADER_LENGTH
        if frame_size < _PIECEWISE_MIN_FRAME or len(tail) < _PREFIX_SIZE + header_length:
            return False
        self._pieces.append(tail)
        self._pieces_size = len(tail)
        self._frame_size = frame_size
        return True

    def _add_piece(self, data: bytes) -> list[RemotingCommand]:
        """``decode`` while a piecewise frame is incomplete: keep ``data``, or complete the frame with
        it and parse what follows it as a fresh read."""
        missing = self._frame_size - self._pieces_size
        if len(data) < missing:
            self._pieces.append(memoryview(data))
            self._pieces_size += len(data)
            return []
        pieces = self._pieces
        first = pieces[0]
        serialize_type = first[4]
        body_start = _PREFIX_SIZE + (_PREFIX.unpack_from(first, 0)[1] & _MAX_HEADER_LENGTH)
        header = first[_PREFIX_SIZE:body_start].tobytes()
        pieces[0] = first[body_start:]
        pieces.append(memoryview(data)[:missing])
        body = b"".join(pieces)
        self._pieces = []
        self._pieces_size = self._frame_size = 0
        try:
            command = decode_command(serialize_type, header, body)
        except ProtocolError as exc:
            self.error = exc
            raise
        if missing == len(data):
            return [command]
        commands = self.decode(data[missing:])
        commands.insert(0, command)
        return commands

    def _unpiece(self) -> None:
        """Move a piecewise frame's reads into the buffer (for ``feed`` and reads that are not bytes)."""
        if self._pieces:
            for piece in self._pieces:
                self._buffer += piece
            self._pieces = []
            self._pieces_size = self._frame_size = 0

    def _raise_if_failed(self) -> None:
        if self.error is not None:
            raise RemoteProtocolError(f"frame decoder failed earlier: {self.error}") from self.error

    def _parse_all(self, buffer: bytes | bytearray, pos: int) -> tuple[list[RemotingCommand], int]:
        commands: list[RemotingCommand] = []
        try:
            while pos < len(buffer) and (parsed := self._parse_at(buffer, pos)) is not None:
                command, pos = parsed
                commands.append(command)
        except ProtocolError as exc:
            self.error = exc
            if not commands:
                raise
        return commands, pos

    def _parse_at(self, buffer: bytes | bytearray, pos: int) -> tuple[RemotingCommand, int] | None:
        """The command framed at ``buffer[pos:]`` and where the next frame starts, or None if the frame is
        not complete yet."""
        available = len(buffer) - pos
        if available < 4:
            return None
        (frame_length,) = _LENGTH.unpack_from(buffer, pos)
        if frame_length < 4:
            raise RemoteProtocolError(f"invalid frame length {frame_length}")
        frame_size = frame_length + 4
        if frame_size > self._max_frame_size:
            raise FrameTooLargeError(frame_size, self._max_frame_size)
        if available < _PREFIX_SIZE:
            return None
        # Validate the second word before waiting for the rest, so garbage fails fast.
        serialize_type = buffer[pos + 4]
        header_length = _PREFIX.unpack_from(buffer, pos)[1] & _MAX_HEADER_LENGTH
        if serialize_type not in _KNOWN_SERIALIZE_TYPES:
            raise RemoteProtocolError(f"unknown serialize type {serialize_type}")
        if header_length > frame_length - 4:
            raise RemoteProtocolError(f"header length {header_length} exceeds frame length {frame_length}")
        if available < frame_size:
            return None
        header_start = pos + _PREFIX_SIZE
        body_start = header_start + header_length
        end = pos + frame_size
        if type(buffer) is bytes:  # slices of bytes are bytes
            header, body = buffer[header_start:body_start], buffer[body_start:end]
        else:
            with memoryview(buffer) as view:
                header = view[header_start:body_start].tobytes()
                body = view[body_start:end].tobytes() if end > body_start else b""
        return decode_command(serialize_type, header, body), end

    def _compact(self) -> None:
        pos = self._pos
        if pos == len(self._buffer):
            self._buffer.clear()
            self._pos = 0
        elif pos >= _COMPACT_THRESHOLD and pos * 2 >= len(self._buffer):
            del self._buffer[:pos]
            self._pos = 0


def encode_frame_parts(cmd: RemotingCommand) -> list[Body]:
    """Encode ``cmd`` as buffers to write in order, without copying the body.

    Returns:
        ``[prefix_and_header]`` or ``[prefix_and_header, body]``; the body is the
        command's own object (``bytes`` or ``memoryview``), suitable for
        ``writelines`` or ``socket.sendmsg``.

    Raises:
        LocalProtocolError: The header or frame is too large for the wire format, or the
            body is not a contiguous buffer.
    """
    header = encode_header(cmd)
    if len(header) > _MAX_HEADER_LENGTH:
        raise LocalProtocolError(f"header of {len(header)} bytes exceeds {_MAX_HEADER_LENGTH} bytes")
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
    first = _PREFIX.pack(frame_length, (int(cmd.serialize_type) << 24) | len(header)) + header
    return [first, body] if body_size else [first]


def encode_frame(cmd: RemotingCommand) -> bytes:
    """Encode ``cmd`` as one contiguous frame.

    Raises:
        LocalProtocolError: See :func:`encode_frame_parts`.
    """
    return b"".join(encode_frame_parts(cmd))
