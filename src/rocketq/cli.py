"""The ``rocketq`` command line: servers (``namesrv``, ``broker``, ``up``), ``admin`` and ``bench``."""

from __future__ import annotations

import logging

import click

from rocketq import __version__
from rocketq.admin.cli import admin
from rocketq.bench.commands import bench
from rocketq.runner import broker_command, namesrv_command, up_command

log = logging.getLogger(__name__)


@click.group()
@click.version_option(__version__, prog_name="rocketq")
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    default="WARNING",
    show_default=True,
    help="Logging level (logs go to stderr).",
)
def main(log_level: str) -> None:
    """rocketq: a RocketMQ-compatible message queue."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")


main.add_command(admin)
main.add_command(bench)
main.add_command(namesrv_command)
main.add_command(broker_command)
main.add_command(up_command)


if __name__ == "__main__":
    main()
