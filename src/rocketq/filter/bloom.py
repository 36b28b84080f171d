"""The bloom filter behind the broker's filter bit maps (RocketMQ's ``BloomFilter``, same numbers).

Every SQL92 subscription (a group on a topic) owns ``k`` of the ``m`` bits of a bit map: the positions
come from ``"<group>#<topic>"`` hashed with MurmurHash3 (x64, 128-bit, seed 0: Guava's
``murmur3_128``, so the positions match a RocketMQ broker's), combined as ``h1 + i * h2`` for
``i = 1..k`` (Kirsch and Mitzenmacher). At dispatch a message's bit map gets the bits of every
subscription whose selector it matches; a pull then checks its own ``k`` bits. All set means "may
match" (evaluate the selector); any clear means "cannot match" (skip without reading the message).

``k`` and ``m`` follow from the broker settings ``maxErrorRateOfBloomFilter`` (``f``, percent) and
``expectConsumerNumUseFilter`` (``n``): ``k = ceil(log0.5(f/100))``,
``m = ceil(n * log2(100/f) * log2(e))`` rounded up to whole bytes. RocketMQ's defaults, f=20 and n=32,
give k=3 and m=112 bits (14 bytes per message).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mmh3

BITS_PER_BYTE = 8


@dataclass(frozen=True, slots=True)
class BloomFilterData:
    """One subscription's bits (RocketMQ's ``BloomFilterData``: ``bitPos``, ``bitNum``)."""

    bit_pos: tuple[int, ...]
    bit_num: int

    def byte_masks(self) -> tuple[tuple[int, int], ...]:
        """Each bit as (byte index, mask) in a bit map: bit ``p`` is ``1 << p % 8`` of byte ``p // 8``."""
        return tuple((position // BITS_PER_BYTE, 1 << position % BITS_PER_BYTE) for position in self.bit_pos)


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


@dataclass(frozen=True, slots=True)
class BloomFilter:
    """``k`` bits per subscription out of ``m``; see the module docstring."""

    error_rate_percent: int = 20
    expected_subscriptions: int = 32

    def __post_init__(self) -> None:
        if not 1 <= self.error_rate_percent < 100:
            raise ValueError(f"maxErrorRateOfBloomFilter must be 1..99, not {self.error_rate_percent}")
        if self.expected_subscriptions < 1:
            raise ValueError(f"expectConsumerNumUseFilter must be at least 1, not {self.expected_subscriptions}")

    @property
    def k(self) -> int:
        """Bits per subscription (hash functions)."""
        return math.ceil(math.log(self.error_rate_percent / 100) / math.log(0.5))

    @property
    def m(self) -> int:
        """Bits in a message's bit map: a multiple of 8."""
        error_rate = self.error_rate_percent / 100
        bits = math.ceil(self.expected_subscriptions * math.log2(1 / error_rate) * math.log2(math.e))
        return BITS_PER_BYTE * math.ceil(bits / BITS_PER_BYTE)

    @property
    def bit_map_bytes(self) -> int:
        return self.m // BITS_PER_BYTE

    def bit_positions(self, key: str) -> tuple[int, ...]:
        """The ``k`` bits of ``key`` (``"<group>#<topic>"``)."""
        h1, _ = mmh3.hash64(key.encode(), 0, True, True)
        hash1, hash2 = _int32(h1), _int32(h1 >> 32)
        m = self.m
        positions = []
        for i in range(1, self.k + 1):
            combined = _int32(hash1 + i * hash2)
            if combined < 0:
                combined = ~combined
            positions.append(combined % m)
        return tuple(positions)

    def generate(self, key: str) -> BloomFilterData:
        return BloomFilterData(self.bit_positions(key), self.m)

    def is_valid(self, data: BloomFilterData | None) -> bool:
        """Whether ``data`` was made by a filter of this size (RocketMQ's ``isValid``)."""
        return data is not None and data.bit_num == self.m and len(data.bit_pos) == self.k

    def hash_to(self, data: BloomFilterData, bit_map: bytearray) -> None:
        """Set ``data``'s bits in ``bit_map`` (``bit_map_bytes`` long)."""
        for index, mask in data.byte_masks():
            bit_map[index] |= mask

    @staticmethod
    def is_hit(data: BloomFilterData, bit_map: bytes | bytearray) -> bool:
        """Whether every one of ``data``'s bits is set in ``bit_map``: the message may match."""
        return all(bit_map[index] & mask for index, mask in data.byte_masks())
