"""The Python worker's long-lived objects are frozen once, after the first batch a task yields, and the
batches pass through unchanged. Run in a child interpreter: freezing is for the whole process."""

from __future__ import annotations

import json
import subprocess
import sys

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
