"""Store errors. Normal outcomes (full disk, message too large, offset past the end) are statuses in the
results; exceptions are for broken invariants and corrupt files."""

from __future__ import annotations

from rocketq.common.errors import RocketqError


class StoreError(RocketqError):
    """Base class of store errors."""


class CorruptRecordError(StoreError):
    """A record that fails its magic, size or CRC checks."""

    def __init__(self, path: str, offset: int, reason: str) -> None:
        self.path = path
        self.offset = offset
        self.reason = reason
        super().__init__(f"{path} at offset {offset}: {reason}")


class MessageTooLargeError(StoreError):
    """A message whose encoded record exceeds ``max_message_size``."""

    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(f"message of {size} bytes exceeds the limit of {limit} bytes")


class StoreClosedError(StoreError):
    """The store was used after ``close()``."""
