"""Names for the two kinds of offset RocketMQ uses, so mypy keeps them apart."""

from __future__ import annotations

from typing import NewType

PhysicalOffset = NewType("PhysicalOffset", int)
"""Byte position in the CommitLog (across all of its files)."""

QueueOffset = NewType("QueueOffset", int)
"""Logical position in one ConsumeQueue: the n-th message of a topic/queue."""
