"""UNIQ_KEY ids: Java MessageClientIDSetter's layout, unique, consecutive within a batch."""

from __future__ import annotations

import datetime
import os
import struct
import threading
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.client.unique_id import UniqueIdGenerator


def test_layout_is_ip_pid_random_time_counter() -> None:
    generator = UniqueIdGenerator("10.1.2.3")
    now_ms = int(time.time() * 1000)
    unique_id = generator.next_id(now_ms)
    assert len(unique_id) == 32 and unique_id == unique_id.upper()
    ip, pid, _, elapsed, counter = struct.unpack(">4shiiH", bytes.fromhex(unique_id))
    assert ip == bytes([10, 1, 2, 3])
    assert pid == os.getpid() & 0x7FFF
    assert 0 <= elapsed <= 31 * 24 * 3600 * 1000  # ms since the month began
    assert counter == 0


def test_batches_continue_the_single_id_sequence() -> None:
    generator = UniqueIdGenerator("127.0.0.1")
    now_ms = int(time.time() * 1000)
    first = generator.next_id(now_ms)
    batch = generator.next_ids(5, now_ms)
    last = generator.next_id(now_ms)
    counters = [struct.unpack(">H", bytes.fromhex(i)[-2:])[0] for i in [first, *batch, last]]
    assert counters == list(range(7))
    assert len({first, *batch, last}) == 7
    assert all(i[:-4] == first[:-4] for i in batch)  # same prefix and time


def test_counter_wraps_at_16_bits() -> None:
    generator = UniqueIdGenerator("127.0.0.1")
    ids = generator.next_ids(65_538, int(time.time() * 1000))
    assert ids[65_535].endswith("FFFF") and ids[65_536].endswith("0000") and ids[65_537].endswith("0001")


def _month_start_ms(now_ms: int) -> int:
    now = datetime.datetime.fromtimestamp(now_ms / 1000)
    return int(now.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp() * 1000)


@settings(max_examples=200, deadline=None)
@given(
    start_ms=st.integers(min_value=1_000_000_000_000, max_value=4_000_000_000_000),
    calls=st.lists(
        st.tuples(st.integers(min_value=0, max_value=40 * 24 * 3600 * 1000), st.integers(min_value=0, max_value=300)),
        max_size=30,
    ),
)
def test_ids_are_the_layout_formatted_in_one_call(start_ms: int, calls: list[tuple[int, int]]) -> None:
    """Whatever the times (within a millisecond, across months) and batch sizes, each id is the prefix,
    the ms since its month began and the 16-bit counter, as one ``%``-format writes them."""
    generator = UniqueIdGenerator("192.168.7.9")
    prefix = generator.next_id(start_ms)[:20]
    counter, now_ms = 1, start_ms
    for step_ms, count in calls:
        now_ms += step_ms
        made = generator.next_ids(count, now_ms) if count != 1 else [generator.next_id(now_ms)]
        elapsed = (now_ms - _month_start_ms(now_ms)) & 0x7FFFFFFF
        expected = ["%s%08X%04X" % (prefix, elapsed, c & 0xFFFF) for c in range(counter, counter + count)]  # noqa: UP031
        assert made == expected
        counter += count


def test_threads_taking_ids_at_once_get_unique_ones() -> None:
    """No lock: the counter's steps are atomic, so ids taken by several threads at once never repeat."""
    generator = UniqueIdGenerator("127.0.0.1")
    now_ms = int(time.time() * 1000)
    made: list[list[str]] = [[] for _ in range(4)]

    def take(into: list[str]) -> None:
        for _ in range(2_000):
            into.append(generator.next_id(now_ms))
            into.extend(generator.next_ids(3, now_ms))

    threads = [threading.Thread(target=take, args=(into,)) for into in made]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [unique_id for into in made for unique_id in into]
    assert len(every) == 4 * 2_000 * 4 and len(set(every)) == len(every)
