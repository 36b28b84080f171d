"""The Python worker's heap: long-lived objects kept out of the garbage collector's full passes.

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
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_frozen = False


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
    """``batches`` as they are; after the first one, ``freeze_long_lived``."""
    for batch in batches:
        yield batch
        if not _frozen:
            freeze_long_lived()
