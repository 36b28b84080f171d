"""Errors raised by the sans-IO remoting codec.

The split follows h11: a :class:`RemoteProtocolError` means the peer sent something we
cannot accept (the caller should close the connection), a :class:`LocalProtocolError`
means our own code asked for something the protocol cannot express.
"""

from __future__ import annotations

from rocketq.common.errors import RocketqError


class ProtocolError(RocketqError):
    """Base class of every error raised by :mod:`rocketq.protocol`."""


class LocalProtocolError(ProtocolError):
    """We tried to encode something the wire format cannot carry."""


class RemoteProtocolError(ProtocolError):
    """The peer sent bytes that violate the protocol."""


class FrameTooLargeError(RemoteProtocolError):
    """A frame announced a length above the configured limit.

    Attributes:
        size: Announced frame size in bytes, including the 4-byte length prefix.
        limit: The largest accepted frame size in bytes.
    """

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the limit of {limit} bytes")
        self.size = size
        self.limit = limit

    def __reduce__(self) -> tuple[type[FrameTooLargeError], tuple[int, int]]:
        return (type(self), (self.size, self.limit))
