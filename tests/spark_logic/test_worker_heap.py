"""The Python worker's long-lived objects are frozen once, after the first batch a task yields, the
batches pass through unchanged, and memory the worker frees is kept for its next batches. Run in child
interpreters: both settings are for the whole process."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

SCRIPT = """
import gc, json
from rocketq.spark.worker_heap import after_first_batch, freeze_long_lived

assert gc.get_freeze_count() == 0
batches = after_first_batch(iter(["a", "b", "c"]))
first = next(batches)
frozen_before_resuming = gc.get_freeze_count()
rest = list(batches)
frozen_after_first = gc.get_freeze_count()
again = freeze_long_lived()
print(json.dumps({
    "rows": [first, *rest],
    "before": frozen_before_resuming,
    "after": frozen_after_first,
    "again": again,
    "unchanged": gc.get_freeze_count() == frozen_after_first,
    "second_task": list(after_first_batch(iter([1, 2]))),
}))
"""


def test_objects_alive_after_the_first_batch_are_frozen_once() -> None:
    found = json.loads(subprocess.run([sys.executable, "-c", SCRIPT], check=True, capture_output=True).stdout)
    assert found["rows"] == ["a", "b", "c"]
    assert found["before"] == 0  # nothing frozen while the first batch is still with the consumer
    assert found["after"] > 1000  # the interpreter's and rocketq's objects, once it resumed
    assert found["again"] is False and found["unchanged"]
    assert found["second_task"] == [1, 2]


MEMORY_SCRIPT = """
import json, resource, threading
from rocketq.spark.worker_heap import after_first_batch, keep_freed_memory

if {keep}:
    assert list(after_first_batch(iter([1]))) == [1]  # a task's batches: the allocator is told first
sizes = [(3 + 7 * i) % 24 * 2**20 + 4096 for i in range(24)]  # blocks of 4 KiB to 23 MiB, as batches are


def one_pass():
    held = []
    for n in sizes:
        held.append(b"x" * n)  # every page written
        if len(held) > 3:
            held.pop(0)


found = {{}}


def measure(where):
    one_pass()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    one_pass()
    found[where] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


measure("main")
thread = threading.Thread(target=measure, args=("thread",))  # the reader's pulls: its event loop's thread
thread.start()
thread.join()
print(json.dumps({{**found, "pages": sum(sizes) // 4096, "kept": keep_freed_memory() if {keep} else None}}))
"""


def _page_faults(keep: bool) -> dict[str, int]:
    script = MEMORY_SCRIPT.format(keep=keep)
    found: dict[str, int] = json.loads(
        subprocess.run([sys.executable, "-c", script], check=True, capture_output=True).stdout
    )
    return found


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the allocator setting is glibc's")
def test_a_task_reuses_the_memory_its_batches_freed() -> None:
    kept = _page_faults(keep=True)
    assert kept["kept"] is True
    # the second pass over the same block sizes finds its memory in the heap: (almost) no page faults,
    # on the main thread and on another thread's arena alike
    assert kept["main"] < kept["pages"] / 100
    assert kept["thread"] < kept["pages"] / 100
    plain = _page_faults(keep=False)  # glibc's defaults: the blocks are mapped and faulted in again
    assert plain["main"] > kept["pages"] / 10
