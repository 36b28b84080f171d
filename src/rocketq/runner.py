"""Running servers from the command line: ``rocketq namesrv``, ``rocketq broker``, ``rocketq up``.

Each runs until SIGTERM or SIGINT, then shuts down gracefully: stop accepting, finish in-flight
requests, flush, persist offsets, remove the store's abort file. uvloop is used when installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import signal
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import click

from rocketq.broker.config import BrokerConfig
from rocketq.broker.server import Broker
from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.server import NameServer
from rocketq.store import FlushDiskType

log = logging.getLogger(__name__)


def run_forever(main: Callable[[asyncio.Event], Coroutine[Any, Any, None]]) -> None:
    """Run ``main(stop)`` on uvloop (or asyncio); SIGTERM/SIGINT set ``stop``."""

    async def wrapper() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await main(stop)

    try:
        import uvloop

        uvloop.run(wrapper())
    except ImportError:
        asyncio.run(wrapper())


async def serve(
    stop: asyncio.Event, starters: list[Callable[[], Awaitable[Any]]], announce: Callable[[list[Any]], None]
) -> None:
    started: list[Any] = []
    try:
        for start in starters:
            started.append(await start())
        announce(started)
        await stop.wait()
        log.info("shutting down")
    finally:
        for server in reversed(started):
            with contextlib.suppress(Exception):
                await server.aclose()


async def start_namesrv(config: NamesrvConfig) -> NameServer:
    server = NameServer(config)
    await server.start()
    return server


async def start_broker(config: BrokerConfig) -> Broker:
    return await Broker(config).start()


# -- click commands (added to the ``rocketq`` group in cli.py) ------------------------------------------


@click.command("namesrv")
@click.option(
    "-c",
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="namesrv.properties",
)
@click.option("-p", "--port", type=int, help="listen port (default 9876)")
@click.option("--host", help="listen address (default 0.0.0.0: all interfaces, with a WARNING; bindAddress)")
def namesrv_command(config_file: Path | None, port: int | None, host: str | None) -> None:
    """Run a NameServer. It has no access control (nor has RocketMQ's): it warns at start when it
    listens beyond loopback."""
    config = NamesrvConfig.from_file(config_file) if config_file else NamesrvConfig()
    if port is not None:
        config = dataclasses.replace(config, listen_port=port)
    if host is not None:
        config = dataclasses.replace(config, listen_host=host)

    def announce(servers: list[Any]) -> None:
        click.echo(f"NameServer listening on {servers[0].address}", err=True)

    run_forever(lambda stop: serve(stop, [lambda: start_namesrv(config)], announce))


@click.command("broker")
@click.option(
    "-c",
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="a RocketMQ-style broker.conf",
)
@click.option("-n", "--namesrv-addr", help="NameServer address(es), host:port;host:port")
@click.option("-p", "--port", type=int, help="listen port (default 10911)")
@click.option("--host", help="listen address (default 0.0.0.0: all interfaces; broker.conf listenHost)")
@click.option("--store", "store_dir", type=click.Path(file_okay=False, path_type=Path), help="store root folder")
def broker_command(
    config_file: Path | None, namesrv_addr: str | None, port: int | None, host: str | None, store_dir: Path | None
) -> None:
    """Run a Broker. Without aclEnable it warns at start when it listens beyond loopback."""
    overrides = {
        "namesrv_addr": namesrv_addr,
        "listen_port": port,
        "listen_host": host,
        "store_path_root_dir": store_dir,
    }
    config = (
        BrokerConfig.from_file(config_file, **overrides)
        if config_file
        else BrokerConfig.from_mapping({k: v for k, v in overrides.items() if v is not None})
    )

    def announce(servers: list[Any]) -> None:
        click.echo(
            f"Broker {config.broker_name} serving at {servers[0].address}, store {config.store_path_root_dir}", err=True
        )

    run_forever(lambda stop: serve(stop, [lambda: start_broker(config)], announce))


@click.command("up")
@click.option("--namesrv-port", default=9876, show_default=True)
@click.option("--broker-port", default=10911, show_default=True)
@click.option(
    "--store",
    "store_dir",
    default=Path(".rocketq"),
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
)
@click.option("--flush", type=click.Choice(["async", "sync"]), default="async", show_default=True)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="address to listen on and advertise (loopback: only this machine; see docs/acl.md before widening)",
)
def up_command(namesrv_port: int, broker_port: int, store_dir: Path, flush: str, host: str) -> None:
    """A local NameServer and Broker in one process, on loopback (Ctrl-C stops both cleanly)."""
    namesrv_config = NamesrvConfig(listen_host=host, listen_port=namesrv_port)

    async def start_pair_broker() -> Broker:
        return await start_broker(
            BrokerConfig(
                namesrv_addr=f"{'127.0.0.1' if host == '0.0.0.0' else host}:{namesrv_port}",
                listen_host=host,
                listen_port=broker_port,
                broker_ip1="" if host == "0.0.0.0" else host,
                store_path_root_dir=store_dir.resolve(),
                flush_disk_type=FlushDiskType.SYNC_FLUSH if flush == "sync" else FlushDiskType.ASYNC_FLUSH,
            )
        )

    def announce(servers: list[Any]) -> None:
        click.echo(
            f"rocketq is up: NameServer {servers[0].address}, Broker {servers[1].address} "
            f"(store {store_dir.resolve()}, {flush} flush). Ctrl-C to stop.",
            err=True,
        )
        click.echo(f"  try: rocketq admin sendMessage -n {servers[0].address} -t TopicTest -p hello", err=True)

    run_forever(lambda stop: serve(stop, [lambda: start_namesrv(namesrv_config), start_pair_broker], announce))
