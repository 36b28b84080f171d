from __future__ import annotations

from pathlib import Path

from rocketq.store.config_file import read_json, write_json_atomically


def test_atomic_write_keeps_a_backup(tmp_path: Path) -> None:
    path = tmp_path / "config" / "consumerOffset.json"
    write_json_atomically(path, {"offsetTable": {"T@g": {"0": 1}}})
    write_json_atomically(path, {"offsetTable": {"T@g": {"0": 2}}})
    assert read_json(path) == {"offsetTable": {"T@g": {"0": 2}}}
    assert read_json(path.with_name("consumerOffset.json.bak")) == {"offsetTable": {"T@g": {"0": 1}}}
    assert not path.with_name("consumerOffset.json.tmp").exists()


def test_half_written_file_falls_back_to_the_backup(tmp_path: Path) -> None:
    path = tmp_path / "delayOffset.json"
    write_json_atomically(path, {"offsetTable": {"1": 5}})
    write_json_atomically(path, {"offsetTable": {"1": 6}})
    path.write_text('{"offsetTable": {1: ')  # what a non-atomic writer would leave after a crash
    assert read_json(path) == {"offsetTable": {"1": 5}}
    path.unlink()
    assert read_json(path) == {"offsetTable": {"1": 5}}
    assert read_json(tmp_path / "missing.json") is None


def test_fastjson_unquoted_integer_keys(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    path.write_text('{"offsetTable":{"T@g":{0:12,1:7}}, "note": "a {3: b}"}')
    assert read_json(path) == {"offsetTable": {"T@g": {"0": 12, "1": 7}}, "note": "a {3: b}"}
