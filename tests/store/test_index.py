from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.store.index_file import IndexFile, key_hash
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
