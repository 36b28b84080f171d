from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.common.message import encode_properties
from rocketq.store import MessageStore, MessageToStore, StoreConfig


def small_config(root: Path, **overrides: object) -> StoreConfig:
    """Tiny files so a few messages roll the CommitLog, ConsumeQueues and IndexFiles."""
    settings: dict[str, object] = {
        "store_path_root_dir": root,
        "mapped_file_size_commit_log": 4096,
        "mapped_file_size_consume_queue": 20 * 16,
        "max_hash_slot_num": 64,
        "max_index_num": 200,
        "flush_interval_consume_queue_ms": 50,
        "flush_interval_commit_log_ms": 20,
    }
    settings.update(overrides)
    return StoreConfig(**settings)  # type: ignore[arg-type]


def message(topic: str = "TopicA", queue_id: int = 0, body: bytes = b"hello", **properties: str) -> MessageToStore:
    return MessageToStore(topic=topic, queue_id=queue_id, body=body, properties=encode_properties(properties))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    with MessageStore(small_config(tmp_path / "store")) as opened:
        yield opened
