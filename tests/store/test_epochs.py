"""Epoch entries: where two logs stop being known to be equal, and the file that keeps them."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.store.epochs import EpochEntry, EpochFile, common_offset, parse_entries, with_new_epoch

E = EpochEntry


def test_same_history_shares_up_to_the_shorter_log() -> None:
    entries = [E(1, 0), E(2, 500)]
    assert common_offset(entries, 800, entries, 900) == 800
    assert common_offset(entries, 900, entries, 800) == 800


def test_a_former_master_shares_up_to_where_the_new_master_started() -> None:
    old = [E(1, 0)]  # kept writing epoch 1 up to 1200
    new = [E(1, 0), E(2, 1000)]  # its slave, promoted at 1000
    assert common_offset(old, 1200, new, 1500) == 1000
    assert common_offset(old, 900, new, 1500) == 900  # it had less: nothing to cut


def test_the_newest_shared_entry_counts() -> None:
    old = [E(1, 0), E(2, 100), E(4, 700)]  # epoch 4 was its own, never seen by the others
    new = [E(1, 0), E(2, 100), E(3, 600), E(5, 900)]
    assert common_offset(old, 800, new, 1000) == 600


def test_entries_of_the_same_epoch_at_other_offsets_are_not_shared() -> None:
    assert common_offset([E(1, 0), E(2, 50)], 90, [E(1, 0), E(2, 60)], 90) == 50


def test_nothing_shared_and_nothing_known() -> None:
    assert common_offset([E(7, 0)], 500, [E(1, 0)], 900) == 0
    assert common_offset([], 500, [E(1, 0)], 900) is None


def test_a_new_epoch_replaces_an_empty_one_and_must_grow() -> None:
    assert with_new_epoch([E(1, 0), E(2, 100)], 3, 100) == [E(1, 0), E(3, 100)]
    assert with_new_epoch([E(1, 0), E(2, 100)], 3, 50) == [E(1, 0), E(3, 50)]
    with pytest.raises(ValueError, match="not above"):
        with_new_epoch([E(4, 0)], 3, 10)


def test_file_round_trip_and_damage(tmp_path: Path) -> None:
    path = tmp_path / "epochs"
    epochs = EpochFile.load(path)
    assert epochs.entries == [] and epochs.last_epoch == 0
    epochs.begin(1, 0)
    epochs.begin(2, 4096)
    assert path.read_text() == "1 0\n2 4096\n"
    assert EpochFile.load(path).entries == [E(1, 0), E(2, 4096)]
    epochs.cut(4000)
    assert EpochFile.load(path).entries == [E(1, 0)]
    path.write_text("2 0\n1 10\n")
    with pytest.raises(ValueError, match="does not follow"):
        EpochFile.load(path)
    assert parse_entries("# epochs\n\n3 5\n") == [E(3, 5)]
    with pytest.raises(ValueError, match="line 1"):
        parse_entries("3\n")
