"""The bloom filter's sizes and bit positions, as RocketMQ's (Guava's MurmurHash3) make them."""

from __future__ import annotations

import mmh3
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.filter.bloom import BloomFilter


def test_rocketmq_defaults_give_three_of_112_bits() -> None:
    bloom = BloomFilter()  # maxErrorRateOfBloomFilter=20, expectConsumerNumUseFilter=32
    assert (bloom.k, bloom.m, bloom.bit_map_bytes) == (3, 112, 14)
    assert (BloomFilter(10, 20).k, BloomFilter(10, 20).m) == (4, 96)
    assert BloomFilter(1, 64).m % 8 == 0


def test_the_hash_is_guavas_murmur3_128() -> None:
    """Guava's published vectors for murmur3_128 (seed 0 and 1), which RocketMQ hashes with."""
    assert [h & (2**64 - 1) for h in mmh3.hash64(b"hell", 0, True, True)] == [0x629942693E10F867, 0x92DB0B82BAEB5347]
    assert [h & (2**64 - 1) for h in mmh3.hash64(b"hello", 1, True, True)] == [0xA78DDFF5ADAE8D10, 0x128900EF20900135]


@given(st.text(min_size=1, max_size=40))
def test_positions_are_k_bits_inside_the_map_and_hit_once_set(key: str) -> None:
    bloom = BloomFilter()
    data = bloom.generate(key)
    assert bloom.is_valid(data) and data == bloom.generate(key)
    assert len(data.bit_pos) == bloom.k and all(0 <= p < bloom.m for p in data.bit_pos)
    bit_map = bytearray(bloom.bit_map_bytes)
    assert not bloom.is_hit(data, bit_map)
    bloom.hash_to(data, bit_map)
    assert bloom.is_hit(data, bit_map)
    assert sum(bin(b).count("1") for b in bit_map) == len(set(data.bit_pos))


def test_data_of_another_size_is_not_valid() -> None:
    assert not BloomFilter().is_valid(BloomFilter(10, 64).generate("G#T"))
    assert not BloomFilter().is_valid(None)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="maxErrorRateOfBloomFilter"):
        BloomFilter(100, 32)
    with pytest.raises(ValueError, match="expectConsumerNumUseFilter"):
        BloomFilter(20, 0)
