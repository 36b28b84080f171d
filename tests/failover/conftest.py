"""The ``etcd`` fixture: a real single-member etcd on free loopback ports with a temporary data folder
(skipped, saying why, only when the etcd binary is not installed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.testing.etcd import EtcdServer, etcd_binary


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[EtcdServer]:
    if etcd_binary() is None:
        pytest.skip("etcd is not installed (Debian package etcd-server): failover needs a real etcd")
    with EtcdServer(tmp_path / "etcd") as server:
        yield server
