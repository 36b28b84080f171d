"""The broker's message store: CommitLog, ConsumeQueues, IndexFiles, checkpoint, recovery.

Synchronous and file based; it imports nothing above ``rocketq.common`` and never touches sockets or
asyncio. ``MessageStore`` is the one facade the broker uses.
"""

from rocketq.store.config import FlushDiskType, StoreConfig
from rocketq.store.errors import StoreError
from rocketq.store.message_store import MessageStore
from rocketq.store.results import (
    BatchToStore,
    GetMessageResult,
    GetStatus,
    MeasuredBatch,
    MessageToStore,
    PutMessageResult,
    PutStatus,
    StoreStats,
)

__all__ = [
    "BatchToStore",
    "FlushDiskType",
    "GetMessageResult",
    "GetStatus",
    "MeasuredBatch",
    "MessageStore",
    "MessageToStore",
    "PutMessageResult",
    "PutStatus",
    "StoreConfig",
    "StoreError",
    "StoreStats",
]
