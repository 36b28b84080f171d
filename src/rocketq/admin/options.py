"""What every ``rocketq admin`` command shares: the NameServer and ``--json`` options, running an
``AdminClient`` action with one-line errors, and reading a point in time."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TypeVar

import click

from rocketq.client.admin import AdminClient
from rocketq.common.errors import RocketqError

T = TypeVar("T")
DEFAULT_NAMESRV = os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876")


def run(namesrv: str, action: Callable[[AdminClient], Awaitable[T]]) -> T:
    """Run ``action`` with an ``AdminClient`` of ``namesrv``; a rocketq error becomes a one-line
    ``click`` error (exit status 1)."""

    async def main() -> T:
        async with AdminClient(namesrv) as admin:
            return await action(admin)

    try:
        return asyncio.run(main())
    except RocketqError as exc:
        raise click.ClickException(str(exc)) from exc


namesrv_option = click.option(
    "-n",
    "--namesrv-addr",
    "namesrv",
    default=DEFAULT_NAMESRV,
    show_default=True,
    help="NameServer address(es), host:port;host:port (env NAMESRV_ADDR)",
)
json_option = click.option("--json", "as_json", is_flag=True, help="print JSON for scripts")


def parse_time(text: str) -> int:
    """ms since the epoch from ``now``, a number of ms, or an ISO time such as 2026-11-21T10:00:00."""
    if text == "now":
        return int(time.time() * 1000)
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return int(datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError as exc:
        raise click.BadParameter(f"{text!r} is neither ms since the epoch nor an ISO time") from exc
