"""What every ``rocketq admin`` command shares: the NameServer and ``--json`` options, running an
``AdminClient`` action with one-line errors, and reading a point in time."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

import click

from rocketq.client import ClientConfig
from rocketq.client.admin import AdminClient
from rocketq.common.errors import RocketqError

T = TypeVar("T")
DEFAULT_NAMESRV = os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876")


def credentials() -> tuple[str, str]:
    """The ``--access-key``/``--secret-key`` of the running command ("" when not given)."""
    meta = click.get_current_context().meta
    access_key, secret_key = meta.get(_ACCESS_KEY) or "", meta.get(_SECRET_KEY) or ""
    if bool(access_key) != bool(secret_key):
        raise click.UsageError("--access-key and --secret-key go together (or ROCKETQ_ACCESS_KEY/ROCKETQ_SECRET_KEY)")
    return access_key, secret_key


def client_config(namesrv: str) -> ClientConfig:
    """The client settings of the running command: its NameServer and credentials."""
    access_key, secret_key = credentials()
    return ClientConfig(namesrv_addr=namesrv, access_key=access_key, secret_key=secret_key)


def run(namesrv: str, action: Callable[[AdminClient], Awaitable[T]]) -> T:
    """Run ``action`` with an ``AdminClient`` of ``namesrv`` signing with the command's credentials; a
    rocketq error becomes a one-line ``click`` error (exit status 1)."""
    access_key, secret_key = credentials()

    async def main() -> T:
        async with AdminClient(namesrv, access_key=access_key, secret_key=secret_key) as admin:
            return await action(admin)

    try:
        return asyncio.run(main())
    except RocketqError as exc:
        raise click.ClickException(str(exc)) from exc


_ACCESS_KEY = "rocketq.access_key"
_SECRET_KEY = "rocketq.secret_key"


def _remember(key: str) -> Callable[[click.Context, click.Parameter, str | None], None]:
    def store(context: click.Context, _parameter: click.Parameter, value: str | None) -> None:
        context.meta[key] = value

    return store


def namesrv_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``-n``, and the credentials every command signs its requests with (brokers with ACL)."""
    for decorate in (
        click.option(
            "--secret-key",
            envvar="ROCKETQ_SECRET_KEY",
            expose_value=False,
            callback=_remember(_SECRET_KEY),
            help="its secret key (env ROCKETQ_SECRET_KEY)",
        ),
        click.option(
            "--access-key",
            envvar="ROCKETQ_ACCESS_KEY",
            expose_value=False,
            callback=_remember(_ACCESS_KEY),
            help="an account of the brokers' ACL to sign requests with (env ROCKETQ_ACCESS_KEY)",
        ),
        click.option(
            "-n",
            "--namesrv-addr",
            "namesrv",
            default=DEFAULT_NAMESRV,
            show_default=True,
            help="NameServer address(es), host:port;host:port (env NAMESRV_ADDR)",
        ),
    ):
        command = decorate(command)
    return command


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
