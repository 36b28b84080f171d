"""The ``cluster`` fixture of the client tests: a NameServer and two Brokers in-process, with ``TOPIC``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rocketq.client.admin import AdminClient
from rocketq.testing import LocalCluster

from .helpers import TOPIC, close_opened


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(tmp_path, brokers=2) as running:
        async with AdminClient(running.namesrv_addr) as admin:
            await admin.update_topic(TOPIC, cluster="DefaultCluster", read_queues=4, write_queues=4)  # 8 queues
        try:
            yield running
        finally:  # a failed test still closes its consumers
            await close_opened()
