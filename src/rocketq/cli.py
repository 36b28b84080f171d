"""The ``rocketq`` command line: servers (``namesrv``, ``broker``, ``up``), ``admin`` and ``bench``.

``--log-level`` is taken before the subcommand and after it (``rocketq broker --log-level debug``). An
error a user can fix (a port in use, a locked or unusable store, a bad setting) ends the command with one
line saying what and what to do, exit status 1; ``--log-level debug`` adds the traceback.
"""

from __future__ import annotations

import errno
import logging
from typing import Any

import click

from rocketq import __version__
from rocketq.acl.addresses import AclConfigError
from rocketq.admin.cli import admin
from rocketq.bench.commands import bench
from rocketq.common.settings import SettingError
from rocketq.runner import broker_command, namesrv_command, up_command
from rocketq.store.errors import StoreError

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
    if isinstance(exc, StoreError):
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


def _reason(exc: OSError) -> str:
    return str(exc).removeprefix(f"[Errno {exc.errno}] ")


class RocketqGroup(click.Group):
    """The ``rocketq`` group: errors a user can fix are one line (see ``explain``)."""

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
main.add_command(namesrv_command)
main.add_command(broker_command)
main.add_command(up_command)


def _add_log_level_options(group: click.Group) -> None:
    for command in group.commands.values():
        command.params.append(_log_level_after_subcommand())
        if isinstance(command, click.Group):
            _add_log_level_options(command)


_add_log_level_options(main)


if __name__ == "__main__":
    main()
