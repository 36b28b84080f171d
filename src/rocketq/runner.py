"""Running servers from the command line: ``rocketq namesrv``, ``rocketq broker``, ``rocketq up``.

Each runs until SIGTERM or SIGINT, then shuts down gracefully: stop accepting, finish in-flight
requests, flush, persist offsets, remove the store's abort file. uvloop is used when installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from rocketq.broker.config import BrokerConfig, BrokerRole
from rocketq.broker.server import Broker
from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.server import NameServer

if TYPE_CHECKING:
    from rocketq.dashboard.app import Dashboard

log = logging.getLogger(__name__)

# ``rocketq up``'s store sizes, for a laptop or a CI container (RocketMQ's defaults, which ``rocketq broker``
# keeps, take 1 GiB per CommitLog file, 420 MB per index file and 5.7 MiB per ConsumeQueue file); a
# broker.conf given with -c sets its own. README "Disk use" says what they come to.
LOCAL_STORE_SIZES: dict[str, object] = {
    "mapped_file_size_commit_log": 64 * 1024 * 1024,  # 64 MiB per CommitLog file (a message may be 4 MiB)
    "mapped_file_size_consume_queue": 50_000 * 20,  # 50,000 entries: 1 MB per ConsumeQueue file
    "max_hash_slot_num": 50_000,  # index file: 0.2 MB of slots...
    "max_index_num": 200_000,  # ...and 4 MB of entries
}


SLAVE_PORT_OFFSET = 10  # ``rocketq up --slave``: the slave listens on the master's port + 10 (10921)


def slave_beside(master: BrokerConfig) -> BrokerConfig:
    """The SLAVE ``rocketq up --slave`` starts with ``master``: brokerId 1 of the same cluster and
    brokerName, same file sizes, its store in a folder beside the master's (``<store>-slave``), listening
    on the master's port + 10 (a free one when the master's is 0); it finds its master's HA address
    through the NameServer."""
    root = master.store_path_root_dir
    return dataclasses.replace(
        master,
        broker_role=BrokerRole.SLAVE,
        broker_id=1,
        store_path_root_dir=root.with_name(f"{root.name}-slave"),
        listen_port=0 if master.listen_port == 0 else master.listen_port + SLAVE_PORT_OFFSET,
        ha_listen_port=-1,
        ha_master_address="",
    )


def keep_made_sizes(config: BrokerConfig) -> BrokerConfig:
    """``config``, or for a store made with RocketMQ's sizes (before ``rocketq up`` had its own) whose
    CommitLog files the local ones would not open, ``config`` with RocketMQ's sizes back."""
    commit_log = config.store_path_root_dir / "commitlog"
    made = {path.stat().st_size for path in commit_log.glob("[0-9]*")} if commit_log.is_dir() else set()
    local = all(getattr(config, name) == size for name, size in LOCAL_STORE_SIZES.items())
    if not local or not made or made == {config.mapped_file_size_commit_log}:
        return config
    log.warning("store %s was made with RocketMQ's file sizes: keeping them (docs/configuration.md)", commit_log.parent)
    rocketmq = BrokerConfig()
    return dataclasses.replace(config, **{name: getattr(rocketmq, name) for name in LOCAL_STORE_SIZES})


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


async def start_broker(config: BrokerConfig, config_file: Path | None = None) -> Broker:
    """A started broker; one that fails to start is closed again (its store unlocked). ``config_file``:
    the broker.conf ``config`` came from (settings changed at run time are written there)."""
    broker = Broker(config, config_file=config_file)
    try:
        return await broker.start()
    except BaseException:
        with contextlib.suppress(Exception):
            await broker.aclose()
        raise


async def start_dashboard(namesrv_addr: str, host: str, port: int) -> Dashboard:
    """The web dashboard of ``rocketq up --dashboard`` (its aiohttp comes with the ``server`` extra)."""
    from rocketq.dashboard.app import Dashboard

    return await Dashboard(namesrv_addr, host=host, port=port).start()


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
    help="a RocketMQ-style broker.conf (docs/configuration.md)",
)
@click.option("-n", "--namesrv-addr", help="NameServer address(es), host:port;host:port (default: $NAMESRV_ADDR)")
@click.option("-p", "--port", type=int, help="listen port (default 10911)")
@click.option("--host", help="listen address (default 0.0.0.0: all interfaces; broker.conf listenHost)")
@click.option("--store", "store_dir", type=click.Path(file_okay=False, path_type=Path), help="store root folder")
def broker_command(
    config_file: Path | None, namesrv_addr: str | None, port: int | None, host: str | None, store_dir: Path | None
) -> None:
    """Run a Broker, with RocketMQ's store sizes. Without aclEnable it warns at start when it listens
    beyond loopback. The NameServers: -n, else broker.conf's namesrvAddr, else $NAMESRV_ADDR."""
    config = BrokerConfig.load(
        config_file,
        {"namesrv_addr": os.environ.get("NAMESRV_ADDR", "")},
        {"namesrv_addr": namesrv_addr, "listen_port": port, "listen_host": host, "store_path_root_dir": store_dir},
    )
    if not config.name_servers:
        log.warning(
            "broker %s registers with no NameServer, so clients cannot find it: set namesrvAddr in broker.conf,"
            " -n host:port, or NAMESRV_ADDR",
            config.broker_name,
        )

    def announce(servers: list[Any]) -> None:
        click.echo(
            f"Broker {config.broker_name} serving at {servers[0].address}, store {config.store_path_root_dir}", err=True
        )

    run_forever(lambda stop: serve(stop, [lambda: start_broker(config, config_file)], announce))


@click.command("up")
@click.option(
    "-c",
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="a broker.conf for the broker (the options below win over it)",
)
@click.option("--namesrv-port", type=int, default=9876, show_default=True)
@click.option("--broker-port", type=int, help="[default: 10911, or the broker.conf's listenPort]")
@click.option(
    "--store",
    "store_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="store root folder  [default: .rocketq, or the broker.conf's storePathRootDir]",
)
@click.option(
    "--flush", type=click.Choice(["async", "sync"]), help="[default: async, or the broker.conf's flushDiskType]"
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="address to listen on and advertise (loopback: only this machine; see docs/acl.md before widening)",
)
@click.option("--dashboard", is_flag=True, help="also serve the web dashboard (docs/dashboard.md)")
@click.option("--dashboard-port", type=int, default=8080, show_default=True)
@click.option(
    "--slave",
    is_flag=True,
    help="also start a SLAVE of the broker (brokerId 1, port +10, store <store>-slave; docs/replication.md)",
)
def up_command(
    config_file: Path | None,
    namesrv_port: int,
    broker_port: int | None,
    store_dir: Path | None,
    flush: str | None,
    host: str,
    dashboard: bool,
    dashboard_port: int,
    slave: bool,
) -> None:
    """A local NameServer and Broker in one process, on loopback (Ctrl-C stops both cleanly). Its store
    is sized for a laptop or CI (64 MiB CommitLog files, about 70 MB after the first send; a store made
    with RocketMQ's sizes keeps them); a broker.conf given with -c may set others (docs/configuration.md)."""
    namesrv_config = NamesrvConfig(listen_host=host, listen_port=namesrv_port)
    defaults = {**LOCAL_STORE_SIZES, "listen_port": 10911, "store_path_root_dir": Path(".rocketq")}
    config = BrokerConfig.load(
        config_file,
        defaults,
        {
            "listen_host": host,
            "broker_ip1": None if host == "0.0.0.0" else host,
            "listen_port": broker_port,
            "store_path_root_dir": store_dir,
            "flush_disk_type": None if flush is None else f"{flush.upper()}_FLUSH",
        },
    )
    config = keep_made_sizes(dataclasses.replace(config, store_path_root_dir=config.store_path_root_dir.resolve()))
    flush_name = "sync" if config.store_config().sync_flush else "async"

    def local_address(namesrv: NameServer) -> str:
        return f"{'127.0.0.1' if host == '0.0.0.0' else host}:{namesrv.port}"

    slave_config = slave_beside(config) if slave else None

    async def start_pair_broker(namesrv: NameServer, broker_config: BrokerConfig, settings_file: Path | None) -> Broker:
        """``settings_file``: the broker.conf run-time changes are written to (the master's ``-c``)."""
        return await start_broker(
            dataclasses.replace(broker_config, namesrv_addr=local_address(namesrv)), settings_file
        )

    async def start_pair(stop: asyncio.Event) -> None:
        namesrv: list[NameServer] = []

        async def start_first() -> NameServer:
            namesrv.append(await start_namesrv(namesrv_config))
            return namesrv[0]

        starters: list[Callable[[], Awaitable[Any]]] = [
            start_first,
            lambda: start_pair_broker(namesrv[0], config, config_file),
        ]
        if slave_config is not None:
            starters.append(lambda: start_pair_broker(namesrv[0], slave_config, None))
        if dashboard:
            starters.append(lambda: start_dashboard(local_address(namesrv[0]), host, dashboard_port))
        await serve(stop, starters, announce)

    def announce(servers: list[Any]) -> None:
        click.echo(
            f"rocketq is up: NameServer {servers[0].address}, Broker {servers[1].address} "
            f"(store {config.store_path_root_dir}, {flush_name} flush). Ctrl-C to stop.",
            err=True,
        )
        if slave_config is not None:
            click.echo(
                f"  slave of {config.broker_name}: Broker {servers[2].address} (brokerId 1, store"
                f" {slave_config.store_path_root_dir})",
                err=True,
            )
        click.echo(f"  try: rocketq admin sendMessage -n {servers[0].address} -t TopicTest -p hello", err=True)
        if dashboard:
            click.echo(f"  dashboard: {servers[-1].url}", err=True)

    run_forever(start_pair)
