"""``rocketq dashboard``: serve the web dashboard of a running cluster until Ctrl-C."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal

import click

from rocketq.dashboard.app import Dashboard

DEFAULT_PORT = 8080


@click.command("dashboard")
@click.option(
    "-n",
    "--namesrv-addr",
    default=lambda: os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876"),
    show_default="$NAMESRV_ADDR or 127.0.0.1:9876",
    help="NameServer address(es), host:port;host:port",
)
@click.option("-p", "--port", type=int, default=DEFAULT_PORT, show_default=True, help="port to serve at (0: any free)")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="address to serve at (loopback: only this machine; the dashboard has no login of its own)",
)
@click.option("--access-key", envvar="ROCKETQ_ACCESS_KEY", default="", help="ACL account for the brokers")
@click.option("--secret-key", envvar="ROCKETQ_SECRET_KEY", default="", help="its secret key")
def dashboard_command(namesrv_addr: str, port: int, host: str, access_key: str, secret_key: str) -> None:
    """The web dashboard of a running cluster: brokers, topics, consumer groups, message search and a
    test send (docs/dashboard.md)."""
    if bool(access_key) != bool(secret_key):
        raise click.UsageError("--access-key and --secret-key go together")

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        dashboard = Dashboard(namesrv_addr, host=host, port=port, access_key=access_key, secret_key=secret_key)
        async with dashboard:
            click.echo(f"rocketq dashboard of {namesrv_addr} at {dashboard.url} (Ctrl-C to stop)", err=True)
            await stop.wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())
