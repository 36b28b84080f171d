"""``python -m rocketq.namesrv [-p PORT] [-c namesrv.properties]``: run one NameServer."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib
import logging
import sys
from collections.abc import Callable, Sequence

from rocketq.namesrv.config import NamesrvConfig, NamesrvConfigError
from rocketq.namesrv.server import run

log = logging.getLogger("rocketq.namesrv")


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop factory when uvloop is installed, else None (the default asyncio loop)."""
    try:
        uvloop = importlib.import_module("uvloop")
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m rocketq.namesrv", description="Run a rocketq NameServer.")
    parser.add_argument("-c", "--config-file", help="Java-style namesrv.properties (listenPort=9876, ...)")
    parser.add_argument("-p", "--port", type=int, help="port to listen on (default 9876, or listenPort from -c)")
    parser.add_argument("--host", help="address to listen on (default 0.0.0.0)")
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    try:
        config = NamesrvConfig.from_file(args.config_file) if args.config_file else NamesrvConfig()
    except (OSError, NamesrvConfigError) as exc:
        log.error("cannot load %s: %s", args.config_file, exc)
        return 2
    if args.port is not None:
        config = dataclasses.replace(config, listen_port=args.port)
    if args.host is not None:
        config = dataclasses.replace(config, listen_host=args.host)
    try:
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(run(config))
    except OSError as exc:
        log.error("name server failed: %s", exc)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
