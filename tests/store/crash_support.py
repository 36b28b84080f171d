from __future__ import annotations

from pathlib import Path

from rocketq.store import StoreConfig


def child_config(root: Path) -> StoreConfig:
    """The parent's view of the child's store (same file sizes as crash_child.py)."""
    return StoreConfig(
        store_path_root_dir=root,
        mapped_file_size_commit_log=64 * 1024,
        mapped_file_size_consume_queue=20 * 256,
        max_hash_slot_num=512,
        max_index_num=2000,
    )
