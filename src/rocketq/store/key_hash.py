"""Vectorised Java ``String.hashCode`` for many index keys at once.

For an ASCII key of n bytes, hashCode = sum(c_i * 31^(n-1-i)) mod 2^32, so a whole batch of keys is
one multiply and one segmented sum in uint32 arithmetic (which wraps exactly like Java's int).
Keys with non-ASCII characters go through the scalar UTF-16 path. A handful of keys (a single put's
UNIQ_KEY and KEYS) take a scalar path too: numpy's per-call overhead would cost more than the work.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np

from rocketq.common.message import java_string_hash

_POWERS = np.ones(1, dtype=np.uint32)


def _powers(length: int) -> np.ndarray:
    """31^k mod 2^32 for k in 0..length-1."""
    global _POWERS
    if len(_POWERS) < length:
        size = max(length, 2 * len(_POWERS))
        powers = np.empty(size, dtype=np.uint32)
        value = 1
        for k in range(size):
            powers[k] = value
            value = (value * 31) & 0xFFFFFFFF
        _POWERS = powers
    return _POWERS


SCALAR_MAX_KEYS = 8
INT_MIN: Final = -0x8000_0000
"""Java's Integer.MIN_VALUE, whose abs() is itself: the IndexFile stores 0 for it."""


def key_hash(key: str) -> int:
    """abs(Java hashCode), with Integer.MIN_VALUE mapped to 0: what an IndexFile stores for a key."""
    h = java_string_hash(key)
    return 0 if h == INT_MIN else (h if h >= 0 else -h)


def index_key_hashes(keys: Sequence[str]) -> list[int]:
    """``abs(hashCode)`` of each key (Integer.MIN_VALUE maps to 0), as the IndexFile stores them."""
    if len(keys) <= SCALAR_MAX_KEYS:
        return [key_hash(key) for key in keys]
    text = "".join(keys)
    joined = text.encode()
    if len(joined) != len(text):  # some key is not ASCII: hash those one by one
        return _mixed_hashes(keys)
    lengths = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    data = np.frombuffer(joined, dtype=np.uint8).astype(np.uint32)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    # exponent of each byte: distance to the end of its own key
    key_end_of_byte = np.repeat(ends, lengths)
    exponents = key_end_of_byte - 1 - np.arange(len(data), dtype=np.int64)
    weighted = data * _powers(int(lengths.max()))[exponents]
    nonempty = lengths > 0
    sums = np.zeros(len(keys), dtype=np.uint32)
    if nonempty.any():
        sums[nonempty] = np.add.reduceat(weighted, starts[nonempty]).astype(np.uint32)
    signed = sums.view(np.int32).astype(np.int64)
    hashes = np.abs(signed)
    hashes[signed == INT_MIN] = 0
    result: list[int] = hashes.tolist()
    return result


def _mixed_hashes(keys: Sequence[str]) -> list[int]:
    """ASCII keys through the vectorised path, the others through the scalar UTF-16 one."""
    ascii_positions = [position for position, key in enumerate(keys) if key.isascii()]
    result = [0] * len(keys)
    for position, value in zip(ascii_positions, index_key_hashes([keys[p] for p in ascii_positions]), strict=True):
        result[position] = value
    for position, key in enumerate(keys):
        if not key.isascii():
            result[position] = key_hash(key)
    return result
