"""UNIQ_KEY ids: Java MessageClientIDSetter's layout, unique, consecutive within a batch."""

from __future__ import annotations

import os
import struct
import time

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
