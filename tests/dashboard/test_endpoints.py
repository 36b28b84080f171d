"""The dashboard's HTTP answers, read with aiohttp's client: the JSON of the cluster (the broker's own
rates, sampled on its injected clock), redirects carrying errors, a NameServer that does not answer,
the static files."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from rocketq.client import Message, Producer
from rocketq.dashboard.app import Dashboard
from rocketq.testing import FakeClock, LocalCluster


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(tmp_path) as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def test_the_cluster_json_shows_the_brokers_own_rates(tmp_path: Path, http: aiohttp.ClientSession) -> None:
    clock = FakeClock()  # the broker samples its counters once a second of this clock
    async with LocalCluster(tmp_path, clock=clock) as cluster, Dashboard(cluster.namesrv_addr, port=0) as dashboard:
        first = await (await http.get(dashboard.url + "api/cluster")).json()
        [broker] = first["brokers"]
        assert broker["brokerName"] == "broker-a" and broker["role"] == "ASYNC_MASTER"
        assert broker["version"] == "V4_9_8"  # RocketMQ 4.9.8's name, as rocketq brokers announce themselves
        assert broker["putTps"] == 0.0 and 0 < broker["diskRatio"] < 1
        async with Producer(group="RateP", namesrv_addr=cluster.namesrv_addr) as producer:
            for i in range(10):
                await producer.send(Message("RateTopic", f"r{i}".encode()))
        clock.advance(1.0)

        async def put_tps() -> float:
            second = await (await http.get(dashboard.url + "api/cluster")).json()
            return float(second["brokers"][0]["putTps"])

        tps = await put_tps()
        for _ in range(750):  # the broker samples on its loop once its clock moved: poll up to ~15 s
            if tps > 0:
                break
            await asyncio.sleep(0.02)
            tps = await put_tps()
        assert tps == pytest.approx(10.0)  # ten messages in the broker's last (fake) second
        page = await (await http.get(dashboard.url)).text()
        assert "<td>10.00</td>" in page  # the cluster page shows the same rate


async def test_errors_are_shown_on_the_pages(cluster: LocalCluster, http: aiohttp.ClientSession) -> None:
    async with Dashboard(cluster.namesrv_addr, port=0) as dashboard:
        unknown = await http.get(dashboard.url + "topics/NoSuchTopic", allow_redirects=False)
        assert unknown.status == 303 and unknown.headers["Location"].startswith("/topics?error=")
        shown = await (await http.get(dashboard.url + "topics/NoSuchTopic")).text()
        assert 'class="error"' in shown and "NoSuchTopic" in shown
        bad = await http.post(dashboard.url + "topics", data={"topic": "T", "read_queues": "x"}, allow_redirects=False)
        assert bad.status == 303 and "error=" in bad.headers["Location"]
        message = await (await http.get(dashboard.url + "message?id=not-an-id")).text()
        assert "is not an offset message id" in message
        script = await http.get(dashboard.url + "static/dashboard.js")
        assert script.status == 200 and "data-confirm" in await script.text()


async def test_a_name_server_that_does_not_answer(http: aiohttp.ClientSession) -> None:
    async with Dashboard("127.0.0.1:1", port=0) as dashboard:
        answer = await http.get(dashboard.url)
        assert answer.status == 502
        assert "The cluster did not answer" in await answer.text()
        document = await http.get(dashboard.url + "api/cluster")
        assert document.status == 502 and "127.0.0.1:1" in (await document.json())["error"]


ACL = """
accounts:
  - {accessKey: operator, secretKey: operator-secret, admin: true}
  - {accessKey: shop-app, secretKey: shop-secret, topicPerms: [Orders=PUB|SUB]}
"""


async def test_under_acl_the_dashboard_signs_with_its_account(tmp_path: Path, http: aiohttp.ClientSession) -> None:
    (tmp_path / "plain_acl.yml").write_text(ACL)
    async with LocalCluster(tmp_path / "cluster", acl_enable=True, acl_file=tmp_path / "plain_acl.yml") as cluster:
        async with Dashboard(cluster.namesrv_addr, port=0, access_key="shop-app", secret_key="shop-secret") as shop:
            refused = await (await http.post(shop.url + "topics", data={"topic": "Refunds"})).text()
            assert "NO_PERMISSION" in refused and "needs an admin account" in refused
            assert "Refunds" not in await (await http.get(shop.url + "topics")).text()
        async with Dashboard(cluster.namesrv_addr, port=0, access_key="operator", secret_key="operator-secret") as ops:
            created = await (await http.post(ops.url + "topics", data={"topic": "Refunds"})).text()
            assert "Topic Refunds created on 1 broker(s)." in created
