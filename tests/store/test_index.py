from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.common.record import SysFlag
from rocketq.store.index_file import IndexFile, key_hash
from rocketq.store.index_service import are_indexed, is_indexed
from rocketq.store.key_hash import index_key_hashes

keys = st.text(alphabet=st.sampled_from("ab#é😀xyz"), min_size=0, max_size=6)


@given(st.lists(keys, max_size=50))
def test_vectorised_hash_matches_java(sample: list[str]) -> None:
    assert index_key_hashes(sample) == [key_hash(k) for k in sample]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["T#a", "T#b", "T#c", "T#d", "U#a"]), min_size=1, max_size=9), max_size=8))
def test_batched_puts_chain_every_key(batches: list[list[str]]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        index = IndexFile(Path(directory) / "20240101000000000", slot_count=3, max_entries=40, create=True)
        expected: dict[str, list[int]] = {}
        offset = 0
        for batch in batches:
            offsets = list(range(offset, offset + len(batch)))
            written = index.put_hashed([key_hash(k) for k in batch], offsets, [1_000_000 + o for o in offsets])
            for key, phy in zip(batch[:written], offsets, strict=False):
                expected.setdefault(key, []).append(phy)
            offset += len(batch)
        for key, phys in expected.items():
            found: list[int] = []
            index.lookup(key, 0, 2**62, 1000, found)
            assert found == phys[::-1]
        index.close()


long_keys = st.text(alphabet=st.sampled_from("ab#é😀xyz0123456789ABCDEF"), min_size=0, max_size=80) | st.just(
    "k" * 1500
)


@given(st.lists(long_keys, min_size=9, max_size=30))
def test_scalar_and_vectorised_hashes_agree(sample: list[str]) -> None:
    """Lists of up to 8 keys take the scalar path, longer ones the numpy path."""
    assert index_key_hashes(sample) == [h for key in sample for h in index_key_hashes([key])]
    assert index_key_hashes(sample[:8]) == [key_hash(k) for k in sample[:8]]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["T#a", "T#b", "T#c", "T#d", "U#a", "U#b"]), min_size=9, max_size=39))
def test_file_bytes_do_not_depend_on_batching(batch: list[str]) -> None:
    """One call of many entries (numpy path) writes the same bytes as one call per entry (scalar path)."""
    hashes = [key_hash(k) for k in batch]
    offsets = list(range(100, 100 + len(batch)))
    stamps = [1_000_000 + 700 * o for o in offsets]
    with tempfile.TemporaryDirectory() as directory:
        together = IndexFile(Path(directory) / "20240101000000000", slot_count=5, max_entries=40, create=True)
        apart = IndexFile(Path(directory) / "20240101000000001", slot_count=5, max_entries=40, create=True)
        assert together.put_hashed(hashes, offsets, stamps) == len(batch)
        for i in range(len(batch)):
            assert apart.put_hashed(hashes[i : i + 1], offsets[i : i + 1], stamps[i : i + 1]) == 1
        assert bytes(together.mapped.buffer) == bytes(apart.mapped.buffer)
        together.close()
        apart.close()


PREPARED = int(SysFlag.TRANSACTION_PREPARED_TYPE)
COMMITTED = int(SysFlag.TRANSACTION_COMMIT_TYPE)
ROLLED_BACK = int(SysFlag.TRANSACTION_ROLLBACK_TYPE)


@pytest.mark.parametrize(
    ("physical", "sys_flag", "indexed_until", "expected"),
    [
        (100, 0, 99, True),  # past what the index has
        (100, 0, 100, False),  # the index already reaches it
        (50, 0, 100, False),
        (100, PREPARED, 0, True),  # half messages are indexed, as RocketMQ does
        (100, COMMITTED, 0, True),
        (100, ROLLED_BACK, 0, False),  # a rollback never is
        (100, ROLLED_BACK | int(SysFlag.COMPRESSED), 0, False),  # other flag bits do not matter
    ],
)
def test_which_records_get_their_keys_indexed(physical: int, sys_flag: int, indexed_until: int, expected: bool) -> None:
    assert is_indexed(physical, sys_flag, indexed_until) is expected
    columns = are_indexed(np.array([physical], dtype=np.int64), np.array([sys_flag], dtype=np.int64), indexed_until)
    assert columns.tolist() == [expected]
