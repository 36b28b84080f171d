"""Byte-level helpers for the numba kernels over stored records: big-endian reads, a name match, a copy
and CRC-32.

They are plain Python functions written in the subset numba compiles. Each kernel module compiles them
itself (``numba.njit(inline=...)(int32_at)``) and keeps the compiled versions as its own module globals,
because numba freezes a kernel's globals into the compiled code. Arguments are uint8 arrays and int64
positions.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def int32_at(b: Any, p: Any) -> Any:
    """The big-endian signed int32 at ``p``."""
    v = (np.int64(b[p]) << 24) | (np.int64(b[p + 1]) << 16) | (np.int64(b[p + 2]) << 8) | np.int64(b[p + 3])
    return v - (np.int64(1) << 32) if v >= (np.int64(1) << 31) else v


def int64_at(b: Any, p: Any) -> Any:
    """The big-endian signed int64 at ``p``."""
    v = np.uint64(0)
    for k in range(8):
        v = (v << np.uint64(8)) | np.uint64(b[p + k])
    return np.int64(v)


def starts_with(b: Any, p: Any, end: Any, name: Any) -> bool:
    """Whether the bytes from ``p`` (which must end by ``end``) start with ``name``."""
    if p + len(name) > end:
        return False
    for k in range(len(name)):  # noqa: SIM110 (numba compiles loops, not generators)
        if b[p + k] != name[k]:
            return False
    return True


def copy(out: Any, at: Any, b: Any, start: Any, stop: Any) -> None:
    """``out[at:] = b[start:stop]``. Compile it with ``inline="never"``: a loop over two slices in a
    function of its own is vectorised by LLVM into a memcpy-like loop (~0.04 µs a KiB); slice
    assignment, or this loop inlined into a bigger kernel, runs 10-40x slower."""
    source = b[start:stop]
    target = out[at : at + (stop - start)]
    for k in range(len(source)):
        target[k] = source[k]


def crc_tables() -> np.ndarray:
    """The eight 256-entry tables of CRC-32 (IEEE, reflected) sliced by 8."""
    tables = np.zeros((8, 256), dtype=np.int64)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        tables[0, i] = c
    for i in range(256):
        c = int(tables[0, i])
        for k in range(1, 8):
            c = int(tables[0, c & 0xFF]) ^ (c >> 8)
            tables[k, i] = c
    return tables


CRC_TABLES = crc_tables()


def crc32(b: Any, start: Any, stop: Any) -> Any:
    """``zlib.crc32(b[start:stop])``, eight bytes a step."""
    t = CRC_TABLES
    crc = np.int64(0xFFFFFFFF)
    i = start
    while stop - i >= 8:
        low = crc ^ (
            np.int64(b[i]) | (np.int64(b[i + 1]) << 8) | (np.int64(b[i + 2]) << 16) | (np.int64(b[i + 3]) << 24)
        )
        high = np.int64(b[i + 4]) | (np.int64(b[i + 5]) << 8) | (np.int64(b[i + 6]) << 16) | (np.int64(b[i + 7]) << 24)
        crc = (
            t[7, low & 255] ^ t[6, (low >> 8) & 255] ^ t[5, (low >> 16) & 255] ^ t[4, (low >> 24) & 255]
            ^ t[3, high & 255] ^ t[2, (high >> 8) & 255] ^ t[1, (high >> 16) & 255] ^ t[0, (high >> 24) & 255]
        )  # fmt: skip
        i += 8
    while i < stop:
        crc = t[0, (crc ^ np.int64(b[i])) & 255] ^ (crc >> 8)
        i += 1
    return crc ^ np.int64(0xFFFFFFFF)


def utf8_sequence(b: Any, k: Any, stop: Any) -> Any:
    """The length of the strict UTF-8 sequence that starts with the non-ASCII byte at ``k`` and ends by
    ``stop``, as Python's decoder takes it (no overlong forms, no surrogates, nothing above U+10FFFF);
    0 when there is none."""
    c = np.int64(b[k])
    low, high = np.int64(0x80), np.int64(0xBF)
    if 0xC2 <= c < 0xE0:
        need = 1
    elif 0xE0 <= c < 0xF0:
        need = 2
        if c == 0xE0:
            low = np.int64(0xA0)
        elif c == 0xED:
            high = np.int64(0x9F)
    elif 0xF0 <= c < 0xF5:
        need = 3
        if c == 0xF0:
            low = np.int64(0x90)
        elif c == 0xF4:
            high = np.int64(0x8F)
    else:
        return 0
    if k + need >= stop:
        return 0
    second = np.int64(b[k + 1])
    if second < low or second > high:
        return 0
    for j in range(2, need + 1):
        if np.int64(b[k + j]) & 0xC0 != 0x80:
            return 0
    return need + 1
