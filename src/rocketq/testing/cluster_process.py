"""ClusterProcess: a LocalCluster (NameServer + Broker) in a child process, for benchmarks and tests.

The child runs ``python -m rocketq.testing.cluster_process ROOT SETTINGS_JSON`` on uvloop, prints one
JSON line with its NameServer address, its broker's address and HA address (and its broker's ``/metrics``
port, with metricsExporterType=PROM) once it serves, and shuts down cleanly on SIGTERM (or when its
parent's stdin pipe closes). Separate processes give the broker its own GIL and CPU core, as a real
deployment does.

with ClusterProcess(tmp_path, mapped_file_size_commit_log=...) as cluster:
    ... Producer(group="g", namesrv_addr=cluster.namesrv_addr) ...
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import selectors
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

from rocketq.broker.config import BrokerConfig
from rocketq.runner import run_forever
from rocketq.testing.cluster import LocalCluster

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0


class ClusterProcessError(RuntimeError):
    """The child cluster did not start or stop as expected."""


class ClusterProcess:
    """A child process running ``LocalCluster(root, **broker_overrides)`` (JSON-serialisable values)."""

    def __init__(self, root: Path, **broker_overrides: Any) -> None:
        self.root = root
        self.broker_overrides = broker_overrides
        self.namesrv_addr = ""
        self.metrics_port: int | None = None  # the broker's /metrics, when the overrides turn metrics on
        self.broker_addr = ""  # the broker's address
        self.ha_address = ""  # a master broker's HA service (rocketq.replication)
        self._process: subprocess.Popen[str] | None = None

    @property
    def pid(self) -> int:
        if self._process is None:
            raise ClusterProcessError("the cluster process is not running")
        return self._process.pid

    def start(self) -> ClusterProcess:
        typed_overrides(self.broker_overrides)  # fail here, not in the child
        command = [sys.executable, "-m", "rocketq.testing.cluster_process", str(self.root)]
        command.append(json.dumps(self.broker_overrides))
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        process = self._process
        assert process.stdout is not None
        line = _read_line(process.stdout, START_TIMEOUT_S)
        if not line:
            self.stop()
            raise ClusterProcessError(f"the cluster process exited before serving (code {process.returncode})")
        started = json.loads(line)
        self.namesrv_addr, self.metrics_port = started["namesrv_addr"], started.get("metrics_port")
        self.broker_addr, self.ha_address = started["broker_addr"], started["ha_address"]
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                pipe.close()

    def __enter__(self) -> ClusterProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _read_line(stream: IO[str], timeout_s: float) -> str:
    """One line from ``stream``, or "" when the child closed it; ClusterProcessError after ``timeout_s``."""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        if not selector.select(timeout_s):
            raise ClusterProcessError(f"the cluster process did not serve within {timeout_s:.0f} s")
    return stream.readline()


def typed_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """JSON values (text, numbers) as the BrokerConfig field types, broker.conf style: "SYNC_FLUSH" becomes
    FlushDiskType.SYNC_FLUSH. Raises ClusterProcessError for a name that is no BrokerConfig field."""
    names = {field.name for field in dataclasses.fields(BrokerConfig)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ClusterProcessError(f"not BrokerConfig fields: {unknown}")
    config = BrokerConfig.from_mapping(overrides)
    return {name: getattr(config, name) for name in overrides}


async def _serve(stop: asyncio.Event, root: Path, overrides: dict[str, Any]) -> None:
    loop = asyncio.get_running_loop()
    # The parent holds our stdin open: its closing (the parent died) stops us as SIGTERM does.
    loop.add_reader(sys.stdin.fileno(), lambda: stop.set() if not os.read(sys.stdin.fileno(), 4096) else None)
    # (a broker given its NameServers, one of a group spread over processes, needs none of its own)
    async with LocalCluster(root, name_servers=0 if overrides.get("namesrv_addr") else 1, **overrides) as cluster:
        broker = cluster.brokers[0]
        metrics = broker.metrics
        started = {
            "namesrv_addr": cluster.namesrv_addr,
            "metrics_port": None if metrics is None else metrics.port,
            "broker_addr": broker.address,
            "ha_address": broker.ha_address,
        }
        print(json.dumps(started), flush=True)
        await stop.wait()


def main(argv: list[str]) -> None:
    root, settings = Path(argv[0]), typed_overrides(json.loads(argv[1]))
    run_forever(lambda stop: _serve(stop, root, settings))


if __name__ == "__main__":
    main(sys.argv[1:])
