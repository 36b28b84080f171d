"""Filter bit maps at dispatch (RocketMQ's CommitLogDispatcherCalcBitMap + ConsumeQueueExt writes).

For each dispatched record of a topic that has SQL92 subscriptions, the broker's calculator gives a
bit map from the record's properties (the bloom bits of every subscription the record matches); the
record gets an ext unit holding it, and its ConsumeQueue entry gets the unit's address in place of the
tag code. Both of the dispatcher's paths (records parsed in Python, and the compiled scan's columns)
hand their records to ``ExtWriter.extend`` and write back the codes it returns: this is the one place
that computes bit maps and writes units.

The calculator is asked once per batch (``for_batch``) with the batch's first CommitLog offset, so it
knows from which offset on every record's bit map includes a newly registered subscription.

Units are an optimisation: a record without one is filtered by its properties. So when an ext file
cannot be made (a full disk), records get no unit and keep their tag code (one log line per episode,
another try at most once per ``RETRY_INTERVAL_S``); the dispatcher does not wait for space.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from rocketq.common.message import SCHEDULE_TOPIC, decode_properties
from rocketq.common.record import NOT_QUEUED_TRANSACTIONS, SysFlag
from rocketq.store.commit_log import CommitLog
from rocketq.store.consume_queue import ConsumeQueue
from rocketq.store.mapped_file import DiskFullError
from rocketq.store.record_views import PropertiesReader

log = logging.getLogger(__name__)

BitMapOf = Callable[[Mapping[str, str]], bytes]
"""A topic's bit map of one record, from its properties."""

RETRY_INTERVAL_S = 1.0
"""After an ext file could not be made, how long records get no unit before the next try."""

ExtRecord = tuple[str, int, int, int, int, int]
"""topic, queue id, queue offset, CommitLog offset, store timestamp, sys flag."""


class BitMapCalculator(Protocol):
    def for_batch(self, first_offset: int) -> Mapping[str, BitMapOf]:
        """The bit map function of each topic with subscriptions, for a batch starting at CommitLog
        offset ``first_offset`` (every record from there on is given each subscription's bits)."""
        ...


class ExtWriter:
    """Writes ext units for the records the calculator has bit maps for (dispatcher thread only)."""

    def __init__(
        self,
        commit_log: CommitLog,
        consume_queue_of: Callable[[str, int], ConsumeQueue],
        calculator: BitMapCalculator,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._commit_log = commit_log
        self._consume_queue_of = consume_queue_of
        self._calculator = calculator
        self._clock = clock
        self._retry_at = 0.0
        self.failing: str | None = None  # why records get no unit now (no space for an ext file)

    def topics(self, first_offset: int) -> Mapping[str, BitMapOf]:
        """The batch's bit map functions (see ``BitMapCalculator``); empty: nothing to extend."""
        return self._calculator.for_batch(first_offset)

    def extend(
        self, records: Sequence[ExtRecord], tags_codes: Sequence[int], bit_maps: Mapping[str, BitMapOf]
    ) -> list[int]:
        """The ConsumeQueue tag code of each record: its unit's address when it got one, else its own
        ``tags_codes`` entry. Records already in their ConsumeQueue (dispatched again after a restart)
        and records no queue takes keep their codes."""
        codes = list(tags_codes)
        reader = PropertiesReader(self._commit_log)
        try:
            for index, (topic, queue_id, queue_offset, physical, stamp, sys_flag) in enumerate(records):
                bit_map_of = bit_maps.get(topic)
                if bit_map_of is None or topic == SCHEDULE_TOPIC:
                    continue
                if sys_flag & SysFlag.TRANSACTION_MASK in NOT_QUEUED_TRANSACTIONS:
                    continue
                queue = self._consume_queue_of(topic, queue_id)
                if queue.ext is None or queue_offset < queue.max_offset:
                    continue
                text = reader.read(physical)
                if text is None:
                    continue
                try:
                    bit_map = bit_map_of(decode_properties(text))
                except Exception:  # a subscription's bug must not stop the dispatcher: no unit, no skip
                    log.exception("filter bit map of %s at %d failed", topic, physical)
                    continue
                if self.failing is not None and self._clock() < self._retry_at:
                    continue
                try:
                    codes[index] = queue.ext.put(codes[index], stamp, bit_map)
                except DiskFullError as exc:
                    self._failed(exc)
                    continue
                if self.failing is not None:
                    log.warning("consume queue ext: units written again (%s is over)", self.failing)
                    self.failing = None
        finally:
            reader.close()
        return codes

    def _failed(self, error: DiskFullError) -> None:
        self._retry_at = self._clock() + RETRY_INTERVAL_S
        if self.failing is None:
            self.failing = str(error)
            log.error("consume queue ext: %s; records get no filter bit map until space returns", error)
