"""``pack_ranges``: the ``rocketmq-store`` source's queue ranges packed into tasks. Every offset of every
range lands in exactly one task, whatever the packing; no task passes the cap; the tasks are about as
many as asked and about as big as each other."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.spark.planning import OPEN_COST_RECORDS, pack_ranges

queue_ranges = st.lists(
    st.tuples(st.integers(0, 10**6), st.integers(0, 3 * 10**5)).map(lambda pair: (pair[0], pair[0] + pair[1])),
    max_size=12,
).map(lambda spans: [(queue, start, end) for queue, (start, end) in enumerate(spans)])


def offsets(ranges: list[tuple[int, int, int]]) -> list[tuple[int, int]]:
    return sorted((queue, offset) for queue, start, end in ranges for offset in range(start, end))


@settings(max_examples=60, deadline=None)
@given(queue_ranges, st.integers(1, 9), st.integers(1, 10**6))
def test_every_offset_is_read_by_exactly_one_task(
    ranges: list[tuple[int, int, int]], partitions: int, max_records: int
) -> None:
    tasks = pack_ranges(ranges, partitions, max_records)
    total = sum(end - start for _, start, end in ranges)
    pieces = [piece for task in tasks for piece in task]
    assert all(end > start for _, start, end in pieces)
    # the pieces of each queue tile its range exactly: no gap, no overlap
    for queue, start, end in ranges:
        mine = sorted((s, e) for q, s, e in pieces if q == queue)
        assert [s for s, _ in mine] == [start, *[e for _, e in mine[:-1]]] if mine else start == end
        assert not mine or mine[-1][1] == end
    assert sum(end - start for _, start, end in pieces) == total
    for task in tasks:
        assert list(task) == sorted(task)  # queue and offset order inside a task
        assert sum(end - start for _, start, end in task) <= max_records
    if total:
        split = min(max_records, max(OPEN_COST_RECORDS, -(-total // partitions)))
        assert len(tasks) <= max(partitions, 2 * -(-total // split))


@pytest.mark.parametrize(
    ("ranges", "partitions", "max_records", "expected"),
    [
        # the bench's store: 8 equal queues on 2 cores make 2 tasks of 4 queues each
        ([(q, 0, 125_000) for q in range(8)], 2, 10**7, [4, 4]),
        # one big queue on 4 cores is cut in 4
        ([(0, 0, 1_000_000)], 4, 10**7, [1, 1, 1, 1]),
        # small queues are packed together (a task's share is at least the open cost)
        ([(q, 0, 100) for q in range(10)], 4, 10**7, [10]),
        # the cap makes more tasks than asked
        ([(0, 0, 1_000_000)], 1, 300_000, [1, 1, 1, 1]),
    ],
)
def test_typical_packings(
    ranges: list[tuple[int, int, int]], partitions: int, max_records: int, expected: list[int]
) -> None:
    tasks = pack_ranges(ranges, partitions, max_records)
    assert sorted(len(task) for task in tasks) == expected
    assert offsets([piece for task in tasks for piece in task]) == offsets(ranges)


def test_nothing_to_read_is_no_task_and_bad_settings_are_refused() -> None:
    assert pack_ranges([(0, 5, 5), (1, 0, 0)], 2, 10) == []
    with pytest.raises(ValueError, match="positive"):
        pack_ranges([(0, 0, 5)], 0, 10)
