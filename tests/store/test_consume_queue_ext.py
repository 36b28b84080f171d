"""ConsumeQueueExt: RocketMQ's unit layout and addresses, files that roll, recovery that never reuses
an address a ConsumeQueue entry may still hold."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from rocketq.store.consume_queue_ext import MAX_ADDR, ConsumeQueueExt, decorate, is_ext_addr, undecorate


def test_units_are_rocketmq_layout_and_addresses_are_below_any_tag_code(tmp_path: Path) -> None:
    ext = ConsumeQueueExt("T", 0, tmp_path, 4096)
    ext.load()
    first = ext.put(2598919, 1_700_000_000_000, b"\x01\x02")
    second = ext.put(-5, 1_700_000_000_001, bytes(14))
    assert first == decorate(0) == -(2**63) and is_ext_addr(first) and is_ext_addr(second)
    assert not is_ext_addr(-(2**31)) and not is_ext_addr(2**31 - 1)  # every int32 tag code is not
    assert undecorate(second) == 22 and MAX_ADDR == -(2**31) - 1
    raw = (tmp_path / "T" / "0" / f"{0:020d}").read_bytes()
    assert raw[:22] == struct.pack(">hqqh", 22, 2598919, 1_700_000_000_000, 2) + b"\x01\x02"
    assert ext.read(first) == (2598919, 1_700_000_000_000, b"\x01\x02")
    assert ext.read(second) == (-5, 1_700_000_000_001, bytes(14))
    ext.put(7, 2, b"\x00\x81" + bytes(12))
    addresses = np.array([second, decorate(5000), first, decorate(56)], dtype=np.int64)
    found, tags, maps = ext.units(addresses, 14, [1, 0])
    assert found.tolist() == [True, False, False, True]  # no file there; a unit of another bit map size
    assert tags.tolist() == [-5, 0, 2598919, 7] and maps.tolist() == [[0, 0], [0, 0], [0, 0], [0x81, 0]]
    ext.close()


def test_a_unit_that_does_not_fit_goes_to_the_next_file(tmp_path: Path) -> None:
    ext = ConsumeQueueExt("T", 1, tmp_path, 100)
    ext.load()
    addresses = [ext.put(i, i, bytes(14)) for i in range(4)]  # 34-byte units: two fit in 100 - 4
    assert [undecorate(a) for a in addresses] == [0, 34, 100, 134]
    raw = (tmp_path / "T" / "1" / f"{0:020d}").read_bytes()
    assert raw[68:70] == struct.pack(">h", -1)  # the rest of the first file is marked unused
    found, tags, _ = ext.units(np.array(addresses, dtype=np.int64), 14)
    assert found.all() and tags.tolist() == [0, 1, 2, 3]
    ext.close()
    reopened = ConsumeQueueExt("T", 1, tmp_path, 100)
    reopened.load()
    reopened.recover(undecorate(addresses[-1]) + 1)
    assert reopened.end_offset == 168 and reopened.read(addresses[2]) == (2, 2, bytes(14))
    reopened.close()


def test_recovery_goes_past_units_the_queue_references_but_the_files_lost(tmp_path: Path) -> None:
    ext = ConsumeQueueExt("T", 2, tmp_path, 100)
    ext.load()
    kept = ext.put(1, 1, b"")
    ext.close()
    reopened = ConsumeQueueExt("T", 2, tmp_path, 100)
    reopened.load()
    reopened.recover(150)  # the queue points at a unit at 149, in a file that is gone
    fresh = reopened.put(2, 2, b"")
    assert undecorate(fresh) >= 150 and reopened.read(kept) == (1, 1, b"")
    assert reopened.read(decorate(149)) is None
    reopened.close()
