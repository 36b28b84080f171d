"""A live cluster with a dashboard in front of it, seeded once per module, and a headless Chromium.

The cluster (``ThreadedCluster``) and the dashboard run on the cluster's loop thread; the tests drive
the browser with Playwright's blocking API from the test thread. The browser is Debian's ``chromium``
(``make test`` installs it where apt-get can): Playwright's own browser downloads are never used.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from rocketq.client import ClientConfig, ConsumeFromWhere, ConsumerConfig, Message, Producer, SyncPushConsumer
from rocketq.client.admin import AdminClient
from rocketq.client.message import SendResult
from rocketq.dashboard.app import Dashboard
from rocketq.testing import ThreadedCluster, wait_until

TOPIC = "DashOrders"
"""Two queues: eight messages the group consumed, then three it has not (lag 3)."""
SEND_TOPIC = "DashSend"
"""Where the browser sends its test message."""
GROUP = "DashGroup"
HTML_BODY = '<script>document.title="pwned"</script><b>bold</b> & done'
BINARY_BODY = bytes([0, 1, 2, 0xFF, 0xFE]) + b"tail"
expect.set_options(timeout=15_000)  # a busy 2-core machine may take a while to answer
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def find_chromium() -> str | None:
    """Debian's chromium (or $ROCKETQ_CHROMIUM, or a chromium on PATH); None when there is none."""
    for candidate in (os.environ.get("ROCKETQ_CHROMIUM"), "/usr/bin/chromium"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass(frozen=True)
class Live:
    cluster: ThreadedCluster
    dashboard: Dashboard
    url: str  # the dashboard's, ending in /
    html_message: SendResult
    binary_message: SendResult
    first_order: SendResult  # body order-0, key order-0


async def _seed(namesrv: str) -> list[SendResult]:
    async with AdminClient(namesrv) as admin:
        await admin.update_topic(TOPIC, read_queues=2, write_queues=2)
        await admin.update_topic(SEND_TOPIC, read_queues=1, write_queues=1)
    async with Producer(group="DashSeed", namesrv_addr=namesrv) as producer:
        sent = [
            await producer.send(Message(TOPIC, f"order-{i}".encode(), tags="TagA", keys=f"order-{i}")) for i in range(6)
        ]
        sent.append(await producer.send(Message(TOPIC, HTML_BODY.encode(), keys="html", properties={"color": "<red>"})))
        sent.append(await producer.send(Message(TOPIC, BINARY_BODY, keys="binary")))
    return sent


async def _send_late(namesrv: str) -> None:
    async with Producer(group="DashSeed", namesrv_addr=namesrv) as producer:
        for i in range(3):
            await producer.send(Message(TOPIC, f"late-{i}".encode()))


def _consumed(cluster: ThreadedCluster) -> int:
    async def committed() -> int:
        async with AdminClient(cluster.namesrv_addr) as admin:
            return sum(max(0, row.consumer_offset) for row in await admin.consumer_progress(GROUP, TOPIC))

    return cluster.call(committed())


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with ThreadedCluster(tmp_path_factory.mktemp("dashboard-cluster")) as cluster:
        sent = cluster.call(_seed(cluster.namesrv_addr))
        config = ConsumerConfig(
            group=GROUP,
            client=ClientConfig(namesrv_addr=cluster.namesrv_addr),
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            persist_consumer_offset_interval_s=0.1,
        )
        with SyncPushConsumer(config, lambda messages: None) as consumer:
            consumer.subscribe(TOPIC)
            consumer.start()
            wait_until(lambda: _consumed(cluster) == len(sent), timeout_s=30, interval_s=0.2)
        cluster.call(_send_late(cluster.namesrv_addr))
        dashboard = cluster.call(Dashboard(cluster.namesrv_addr, port=0).start())
        try:
            yield Live(cluster, dashboard, dashboard.url, sent[6], sent[7], sent[0])
        finally:
            cluster.call(dashboard.aclose())


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = find_chromium()
    if executable is None:
        pytest.skip(
            "no Chromium on this machine (/usr/bin/chromium, $ROCKETQ_CHROMIUM or chromium on PATH): "
            "install Debian's chromium package (apt-get install chromium; `make test` does) to run the browser tests"
        )
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the tests save what the browser showed ($ROCKETQ_SCREENSHOTS when set)."""
    chosen = os.environ.get("ROCKETQ_SCREENSHOTS")
    if chosen:
        Path(chosen).mkdir(parents=True, exist_ok=True)
        return Path(chosen)
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(15_000)
    opened = context.new_page()
    try:
        yield opened
    finally:
        context.close()
