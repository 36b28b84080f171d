"""The Python worker's heap: long-lived objects kept out of the garbage collector's full passes, and the
memory of one batch kept for the next.

Spark reuses a Python worker process for task after task and runs ``gc.collect()`` after each one
(``pyspark.daemon``), and Python runs full collections of its own as a task allocates. A full
collection walks every object the cyclic collector tracks. The sources' decode loads the compiled
record kernels (``rocketq.common.record_columns``): numba and its type system leave about 80,000 such
objects in the worker, more than all of PySpark and pyarrow (about 40,000), and each full collection
walked them all, 0.1 to 0.25 s of CPU on the development VM, after every task: about 0.5 µs per message
of a 1,000,000-message read in two tasks (docs/spark.md, "Benchmark").

``after_first_batch`` wraps a task's batches: once the first batch of the process is made (the kernels
loaded and their signatures compiled or loaded from the cache), every object alive is collected once
and then moved to the permanent generation (``gc.freeze``), which collections skip. Objects frozen are
still freed by their reference counts as usual; only cyclic garbage among them (none is expected from
module-level state) would stay. Done once per process.

Before the first batch, ``keep_freed_memory`` tells the C allocator (glibc's; elsewhere nothing is
done) to keep what the worker frees instead of handing it back to the system. A task allocates and
frees tens of MiB per batch: pull answers of a few MiB (each received into one buffer of its size,
``rocketq.protocol.frame``), and the batch's columns. With glibc's defaults, blocks over its mmap threshold (128 KiB to
32 MiB, raised as it goes) are mapped afresh and unmapped when freed, and free memory at the top of a
heap is trimmed: the next batch faults its pages in again, each page zeroed by the kernel. Measured
in-process on the source's read path (docs/spark.md, "Session 20"): 0.17 against 0.21 µs per 100 B
message for the pulls alone, 0.34 against 0.45 µs with the decode, no page faults left. The cost is
memory: the worker keeps its peak heap (about two batches' worth, a few tens of MiB) until it exits.
"""

from __future__ import annotations

import ctypes
import gc
import platform
import threading
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_frozen = False
_kept: bool | None = None  # what keep_freed_memory did in this process; None before it was called

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
KEPT_TOP_BYTES = 1 << 30
"""Free memory at the top of a heap that glibc keeps rather than trims."""
LARGEST_HEAP_BLOCK = 32 << 20
"""Blocks up to this size come from the heap (glibc's largest allowed threshold); larger ones are mapped."""


def keep_freed_memory() -> bool:
    """Have glibc's allocator keep freed memory for later blocks (fixed thresholds: no trimming below
    ``KEPT_TOP_BYTES``, blocks up to ``LARGEST_HEAP_BLOCK`` from the heap), once per process. True when
    the allocator took the setting (in this call or an earlier one); False elsewhere than glibc."""
    global _kept
    with _lock:
        if _kept is None:
            _kept = False
            if platform.libc_ver()[0] == "glibc":
                mallopt = ctypes.CDLL(None).mallopt
                mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
                trimmed = mallopt(_M_TRIM_THRESHOLD, KEPT_TOP_BYTES)
                mapped = mallopt(_M_MMAP_THRESHOLD, LARGEST_HEAP_BLOCK)
                _kept = bool(trimmed and mapped)
        return _kept


def freeze_long_lived() -> bool:
    """Collect once, then freeze every object alive now (the first call in this process only).
    True when this call froze them."""
    global _frozen
    with _lock:
        if _frozen:
            return False
        gc.collect()
        gc.freeze()
        _frozen = True
        return True


def after_first_batch(batches: Iterator[T]) -> Iterator[T]:
    """``batches`` as they are; ``keep_freed_memory`` before the first one, ``freeze_long_lived`` after it."""
    if _kept is None:
        keep_freed_memory()
    for batch in batches:
        yield batch
        if not _frozen:
            freeze_long_lived()
