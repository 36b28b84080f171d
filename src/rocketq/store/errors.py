"""Store errors. Normal outcomes (full disk, message too large, offset past the end) are statuses in the
results, and damage found at start-up is repaired and listed in ``MessageStore.recovery``; exceptions
are for a store that cannot be opened (files of the wrong size, a directory another process holds)."""

from __future__ import annotations

from rocketq.common.errors import RocketqError


class StoreError(RocketqError):
    """Base class of store errors."""
