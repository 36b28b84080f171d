"""Store errors. Normal outcomes (full disk, message too large, offset past the end) are statuses in the
results, and damage found at start-up is repaired and listed in ``MessageStore.recovery``; exceptions
are for a store that cannot be opened (files of the wrong size, a directory another process holds)."""

from __future__ import annotations

from rocketq.common.errors import RocketqError


class StoreError(RocketqError):
    """Base class of store errors."""


# what a file of an unexpected size means, and what to do about it
OTHER_FILE_SIZES = (
    "the store was made with other file sizes: configure them as they were (mapedFileSizeCommitLog,"
    " mapedFileSizeConsumeQueue, maxHashSlotNum and maxIndexNum in broker.conf), or use a new store"
)
