"""The ``lock`` file of a store directory: one process at a time opens a store (an exclusive
``flock``, released by the kernel when the process dies)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from rocketq.store.errors import StoreError


class StoreLock:
    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd = -1

    def acquire(self) -> None:
        """Raises StoreError when another process holds the store."""
        self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(self._fd)
            self._fd = -1
            raise StoreError(
                f"store {self._path.parent} is locked by another process (a broker running on it?): stop that"
                " process, or give this one another store (--store, storePathRootDir)"
            ) from exc

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
