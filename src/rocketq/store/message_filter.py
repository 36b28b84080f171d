"""What a pull keeps of a queue (RocketMQ's ``MessageFilter``), as the store sees it.

Three checks, cheapest first: the ConsumeQueue tag code (tag subscriptions), the filter bit map that
the dispatcher stored beside the ConsumeQueue (SQL92 subscriptions the broker registered: see
``rocketq.store.consume_queue_ext``), then the message's properties read from the CommitLog (SQL92).
The store knows nothing of the SQL language: the broker hands it the predicate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

PropertiesMatch = Callable[[Mapping[str, str]], bool]
"""Whether a message with these properties is wanted (a compiled SQL92 selector's ``matches``)."""


@dataclass(frozen=True, slots=True)
class BitMapFilter:
    """A registered subscription's bloom bits. A message whose bit map lacks any of them cannot match
    and is skipped without reading it; one with all of them may match and is checked exactly.

    ``byte_masks`` are the bits as (byte index, mask) in a bit map of ``bit_map_bytes`` bytes; only
    messages at CommitLog offsets from ``born_offset`` on had their bit maps computed with this
    subscription known, so older ones are always checked exactly."""

    byte_masks: tuple[tuple[int, int], ...]
    bit_map_bytes: int
    born_offset: int


@dataclass(frozen=True, slots=True)
class MessageFilter:
    tags_codes: frozenset[int] | None = None  # keep tag codes in this set (None: any tag)
    properties_match: PropertiesMatch | None = None  # keep messages whose properties it accepts
    bit_map: BitMapFilter | None = None  # skip messages whose bit map rules them out first

    @property
    def reads_records(self) -> bool:
        """Whether a message must be read from the CommitLog to be decided."""
        return self.properties_match is not None
