from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.broker.config import BrokerConfig
from rocketq.broker.server import Broker
from rocketq.remoting import RemotingClient


def broker_config(root: Path, **overrides: object) -> BrokerConfig:
    settings: dict[str, object] = {
        "store_path_root_dir": root,
        "listen_host": "127.0.0.1",
        "listen_port": 0,
        "broker_ip1": "127.0.0.1",
        "mapped_file_size_commit_log": 1 << 20,
        "mapped_file_size_consume_queue": 20 * 1000,
        "max_hash_slot_num": 1000,
        "max_index_num": 4000,
    }
    settings.update(overrides)
    return BrokerConfig(**settings)  # type: ignore[arg-type]


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    async with Broker(broker_config(tmp_path / "broker")) as running:
        yield running


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    remoting = RemotingClient()
    yield remoting
    await remoting.aclose()
