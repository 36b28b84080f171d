"""Whether rows decoded out of the CommitLog (``rocketq.common.record_arrow.fill_columns``) are the records
their ConsumeQueue entries describe: total size, topic, queue id and queue offset. Used by
``rocketq.store.readonly``; a record that is sound but not its entry's is damage to a reader.

The comparison is one kernel (``_first_mismatch``) that visits each row once, in the subset of Python
numba compiles: compiled on first use (``kernels()``, cached next to this module), or run interpreted
without numba or with ``ROCKETQ_COMPILED_COLUMNS=0`` (correct, much slower), like the decode's kernels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Final

import numpy as np

from rocketq.common import byte_kernels
from rocketq.common.compile_once import CompileOnce
from rocketq.common.record_arrow import NARROW, TOPIC, WIDE, FilledColumns
from rocketq.common.record_columns import as_bytes, compiled_columns_wanted

_QUEUE_OFFSET: Final = WIDE.index("queueOffset")
_QUEUE_ID: Final = NARROW.index("queueId")


@dataclass(frozen=True, slots=True)
class Described:
    """Records at ``positions`` of ``data`` (uint8), as their entries describe them: ``sizes`` and
    ``queue_offsets`` (int64, one per record)."""

    data: np.ndarray
    positions: np.ndarray
    sizes: np.ndarray
    queue_offsets: np.ndarray


def _first_mismatch(
    b: Any,
    positions: Any,
    sizes: Any,
    queue_offsets: Any,
    row: Any,
    row_offsets: Any,
    row_queue_ids: Any,
    topic_ends: Any,
    topics: Any,
    name: Any,
    queue_id: Any,
) -> Any:
    """The first of rows ``row``, ``row + 1``... (the records at ``positions`` of ``b``) that is not the
    record its entry describes (total size read at its position, queue offset, ``queue_id``, topic
    bytes ``name``), or -1 when each is."""
    for i in range(len(positions)):
        r = row + i
        start = topic_ends[r]
        if (
            int32_at(b, positions[i]) != sizes[i]
            or row_offsets[r] != queue_offsets[i]
            or row_queue_ids[r] != queue_id
            or topic_ends[r + 1] - start != len(name)
            or not starts_with(topics, start, start + len(name), name)
        ):
            return r
    return -1


int32_at: Any = byte_kernels.int32_at
starts_with: Any = byte_kernels.starts_with
_PLAIN: Final = SimpleNamespace(first_mismatch=_first_mismatch)


def _compile(numba: Any) -> SimpleNamespace:
    global int32_at, starts_with
    int32_at = numba.njit(inline="always")(byte_kernels.int32_at)
    starts_with = numba.njit(inline="always")(byte_kernels.starts_with)
    compiled = SimpleNamespace(first_mismatch=numba.njit(nogil=True, cache=True)(_first_mismatch))
    nothing, none = as_bytes(b""), np.zeros(0, dtype=np.int64)  # the buffers are passed read-only
    ends = np.zeros(1, dtype=np.int32)
    compiled.first_mismatch(nothing, none, none, none, 0, none, np.zeros(0, dtype=np.int32), ends, nothing, nothing, 0)
    return compiled


_COMPILED = CompileOnce(
    "the store reader's entry check",
    "checking entries in plain Python (slowly)",
    _compile,
    ready=compiled_columns_wanted,
)


def kernels() -> SimpleNamespace:
    """The kernel (``first_mismatch``): compiled on the first call, or the plain function."""
    return _COMPILED.get_or(_PLAIN)


def first_mismatch(filled: FilledColumns, parts: Sequence[Described], topic: str, queue_id: int) -> int | None:
    """The first row ``fill_columns`` decoded from ``parts`` (all their records, in order) that is not the
    record its entry describes (its total size, ``topic``, ``queue_id``, the entry's queue offset); None
    when every row is."""
    wanted = sum(len(part.positions) for part in parts)
    if filled.count != wanted:
        raise ValueError(f"{filled.count} rows decoded for {wanted} entries")
    check = kernels().first_mismatch
    name = as_bytes(topic.encode())
    topics = as_bytes(filled.values[TOPIC])
    offsets, queue_ids = filled.wide[_QUEUE_OFFSET], filled.narrow[_QUEUE_ID]
    row = 0
    for part in parts:
        found = int(
            check(
                as_bytes(part.data),
                np.ascontiguousarray(part.positions, dtype=np.int64),
                np.ascontiguousarray(part.sizes, dtype=np.int64),
                np.ascontiguousarray(part.queue_offsets, dtype=np.int64),
                row,
                offsets,
                queue_ids,
                filled.offsets[TOPIC],
                topics,
                name,
                queue_id,
            )
        )
        if found >= 0:
            return found
        row += len(part.positions)
    return None


def describe(filled: FilledColumns, part: Described, row: int, topic: str, queue_id: int) -> str:
    """How row ``row`` of ``filled``, decoded from ``part`` alone, differs from its entry."""
    start, stop = (int(value) for value in filled.offsets[TOPIC, row : row + 2])
    found = bytes(filled.values[TOPIC][start:stop]).decode(errors="replace")
    size = int(byte_kernels.int32_at(part.data, int(part.positions[row])))
    return (
        f"it is topic {found!r}, queue {int(filled.narrow[_QUEUE_ID, row])}, offset "
        f"{int(filled.wide[_QUEUE_OFFSET, row])}, {size} bytes; its entry says {topic!r}, {queue_id}, "
        f"{int(part.queue_offsets[row])}, {int(part.sizes[row])} bytes"
    )
