"""The broker's bit map calculator for the dispatcher (RocketMQ's CommitLogDispatcherCalcBitMap):
each record of a topic with SQL92 subscriptions gets the bloom bits of every subscription whose
selector it matches (``rocketq.store.ext_writer`` stores them beside the ConsumeQueue).

It computes for the subscriptions the ConsumerFilterManager last published, dead ones included (their
groups may come back within ``filterDataCleanTimeSpan``). A subscription published since the last
batch is born at that batch: its ``born_offset`` becomes the batch's first CommitLog offset, from which
pulls may trust its bits.
"""

from __future__ import annotations

from collections.abc import Mapping

from rocketq.broker.consumer_filters import ConsumerFilterData, ConsumerFilterManager
from rocketq.store.ext_writer import BitMapOf


class FilterBitMaps:
    """A ``rocketq.store.ext_writer.BitMapCalculator`` (called on the dispatcher's thread)."""

    def __init__(self, manager: ConsumerFilterManager) -> None:
        self._manager = manager
        self._taken: dict[str, tuple[ConsumerFilterData, ...]] | None = None
        self._functions: dict[str, BitMapOf] = {}

    def for_batch(self, first_offset: int) -> Mapping[str, BitMapOf]:
        published = self._manager.published
        if published is not self._taken:
            for subscriptions in published.values():
                for data in subscriptions:
                    if data.born_offset < 0:
                        data.born_offset = first_offset
                        self._manager.changed = True  # written with the next persist
            self._functions = {topic: self._bit_map_of(subs) for topic, subs in published.items() if subs}
            self._taken = published
        return self._functions

    def _bit_map_of(self, subscriptions: tuple[ConsumerFilterData, ...]) -> BitMapOf:
        size = self._manager.bloom.bit_map_bytes
        checks = [(data.selector.matches, data.bloom.byte_masks()) for data in subscriptions]

        def bit_map(properties: Mapping[str, str]) -> bytes:
            bits = bytearray(size)
            for matches, byte_masks in checks:
                if matches(properties):
                    for index, mask in byte_masks:
                        bits[index] |= mask
            return bytes(bits)

        return bit_map
