"""The ``rocketq`` command line: servers (``namesrv``, ``broker``, ``up``), ``admin`` and ``bench``.

``--log-level`` is taken before the subcommand and after it (``rocketq broker --log-level debug``). An
error a user can fix (a port in use, a locked or unusable store, a bad setting) ends the command with one
line saying what and what to do, exit status 1; ``--log-level debug`` adds the traceback.
"""

from __future__ import annotations

import errno
import importlib
import logging
from typing import Any

import click

from rocketq import __version__
from rocketq.acl.addresses import AclConfigError
from rocketq.admin.cli import admin
from rocketq.bench.commands import bench
from rocketq.common.settings import SettingError

log = logging.getLogger(__name__)

LOG_LEVELS = click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False)


def _set_log_level(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        logging.getLogger().setLevel(value.upper())


def _log_level_after_subcommand() -> click.Option:
    return click.Option(
        ["--log-level"],
        type=LOG_LEVELS,
        expose_value=False,
        is_eager=True,
        callback=_set_log_level,
        help="Logging level (also accepted before the subcommand).",
    )


def explain(exc: BaseException) -> str | None:
    """One line saying what went wrong and what to do, for the errors a user can fix; else None."""
    if isinstance(exc, SettingError):
        return f"{exc}. Fix it in broker.conf (or the command line) and start again."
    if isinstance(exc, AclConfigError):
        return f"{exc}; see docs/acl.md."
    store_error = _store_error()
    if store_error is not None and isinstance(exc, store_error):
        return f"{exc}."
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        if exc.errno == errno.EADDRINUSE:
            return (
                f"{_reason(exc)}: another process listens there; stop it or choose another port (--port, listenPort)."
            )
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return (
                f"cannot write{where}: {exc.strerror}; choose a folder this user can write (--store, storePathRootDir)."
            )
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EEXIST):
            return (
                f"cannot use{where}: {exc.strerror}; choose an existing, writable folder (--store, storePathRootDir)."
            )
        if exc.errno == errno.ENOSPC:
            return f"no space left{where}; free some, or choose a store on another disk (--store, storePathRootDir)."
        if exc.errno == errno.EADDRNOTAVAIL:
            return f"{_reason(exc)}: no such address on this machine; choose another (--host, listenHost)."
    return None


def _store_error() -> type[Exception] | None:
    """StoreError, where the servers are installed (a client-only install has no store to fail)."""
    try:
        from rocketq.store.errors import StoreError
    except ImportError:
        return None
    return StoreError


def _reason(exc: OSError) -> str:
    return str(exc).removeprefix(f"[Errno {exc.errno}] ")


SERVER_COMMANDS = {"namesrv": "namesrv_command", "broker": "broker_command", "up": "up_command"}
"""The server commands (in ``rocketq.runner``), loaded when used: a client-only install (``pip install
rocketq``, without the ``server`` extra) runs ``rocketq admin`` and ``rocketq bench`` without them."""

EXTRA_COMMANDS = {"dashboard": ("rocketq.dashboard.command", "dashboard_command", "dashboard")}
"""Other commands loaded when used: (module, command, the extra that installs what they import)."""


def _needs_server(name: str, missing: str, extra: str = "server") -> click.Command:
    """What ``rocketq <name>`` is on a client-only install: listed by ``--help``, and saying, whatever
    its arguments, which extra to install."""
    line = f"`rocketq {name}` needs the {extra} packages ({missing} is missing): pip install 'rocketq[{extra}]'"

    def refuse() -> None:
        raise click.ClickException(line)

    return click.Command(
        name,
        callback=refuse,
        help=f"Needs the {extra} packages: pip install 'rocketq[{extra}]'.",
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )


class RocketqGroup(click.Group):
    """The ``rocketq`` group: errors a user can fix are one line (see ``explain``); the server commands
    are imported when asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *SERVER_COMMANDS, *EXTRA_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if (cmd_name in SERVER_COMMANDS or cmd_name in EXTRA_COMMANDS) and cmd_name not in self.commands:
            module, attribute, extra = EXTRA_COMMANDS.get(cmd_name) or (
                "rocketq.runner",
                SERVER_COMMANDS[cmd_name],
                "server",
            )
            command: click.Command
            try:
                loaded = importlib.import_module(module)
            except ImportError as exc:
                command = _needs_server(cmd_name, exc.name or f"a {extra} package", extra)
            else:
                command = getattr(loaded, attribute)
                _add_log_level_option(command)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            if isinstance(exc, click.ClickException | click.exceptions.Exit | click.Abort):
                raise
            line = explain(exc)
            if line is None:
                raise
            log.debug("the command failed", exc_info=exc)
            raise click.ClickException(line) from exc


@click.group(cls=RocketqGroup)
@click.version_option(__version__, prog_name="rocketq")
@click.option(
    "--log-level",
    type=LOG_LEVELS,
    default="WARNING",
    show_default=True,
    help="Logging level (logs go to stderr); also accepted after the subcommand.",
)
def main(log_level: str) -> None:
    """rocketq: a RocketMQ-compatible message queue."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")


main.add_command(admin)
main.add_command(bench)


def _add_log_level_option(command: click.Command) -> None:
    """``--log-level`` after ``command`` and after each of its subcommands."""
    command.params.append(_log_level_after_subcommand())
    if isinstance(command, click.Group):
        for subcommand in command.commands.values():
            _add_log_level_option(subcommand)


_add_log_level_option(admin)
_add_log_level_option(bench)


if __name__ == "__main__":
    main()
