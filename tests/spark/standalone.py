"""A Spark standalone cluster for tests: a master and one worker started from the installed PySpark
(``spark-class``), on loopback ports chosen by the OS; stopped by their process ids."""

from __future__ import annotations

import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import pyspark

from .conftest import FAST_START

SPARK_HOME = Path(pyspark.__file__).resolve().parent


def spark_env(work: Path) -> dict[str, str]:
    """The environment of the cluster's processes and of ``spark-submit``: this interpreter (where rocketq
    is installed) for every Python worker, loopback only."""
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_DIRS=str(work / "local"),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
        SPARK_DAEMON_JAVA_OPTS=FAST_START,
    )
    return env


def free_port() -> int:
    """A loopback port free now (the master's: the worker needs its address before the master runs)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for(stream: IO[str], pattern: str, timeout_s: float, seen: list[str]) -> re.Match[str]:
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(max(0.0, deadline - time.monotonic())):
                break
            line = stream.readline()
            if not line:
                break
            seen.append(line)
            match = re.search(pattern, line)
            if match is not None:
                return match
    raise RuntimeError(f"no {pattern!r} within {timeout_s:.0f} s; output:\n{''.join(seen[-30:])}")


class StandaloneCluster:
    """``with StandaloneCluster(tmp_path) as cluster: ... --master cluster.master_url``."""

    def __init__(self, work: Path, *, cores: int = 2, memory: str = "2g") -> None:
        self.work = work
        self.cores = cores
        self.memory = memory
        self.master_url = ""
        self._processes: list[subprocess.Popen[str]] = []
        self.log: list[str] = []

    def _start(self, *arguments: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *arguments],
            env=spark_env(self.work),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=self.work,
        )
        self._processes.append(process)
        return process

    def __enter__(self) -> StandaloneCluster:
        (self.work / "local").mkdir(parents=True, exist_ok=True)
        self.master_url = f"spark://127.0.0.1:{free_port()}"
        try:  # both at once: the worker keeps trying to register until the master is up
            master = self._start(
                "org.apache.spark.deploy.master.Master",
                "--host", "127.0.0.1", "--port", self.master_url.rsplit(":", 1)[1], "--webui-port", "0",
            )  # fmt: skip
            worker = self._start(
                "org.apache.spark.deploy.worker.Worker",
                "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                "--cores", str(self.cores), "--memory", self.memory,
                "--work-dir", str(self.work / "worker"),
                self.master_url,
            )  # fmt: skip
            assert master.stdout is not None and worker.stdout is not None
            _wait_for(master.stdout, r"Starting Spark master at spark://", 120, self.log)
            _wait_for(worker.stdout, r"Successfully registered with master", 120, self.log)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for process in reversed(self._processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            if process.stdout is not None:
                process.stdout.close()
        self._processes.clear()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def submit(self, script: Path, *arguments: str, timeout_s: float = 240) -> subprocess.CompletedProcess[str]:
        """``spark-submit`` of ``script`` to this cluster (client mode: the driver runs here)."""
        command = [
            str(SPARK_HOME / "bin" / "spark-submit"),
            "--master", self.master_url,
            "--conf", f"spark.pyspark.python={sys.executable}",
            "--conf", "spark.driver.host=127.0.0.1",
            "--conf", "spark.driver.bindAddress=127.0.0.1",
            "--conf", "spark.ui.enabled=false",
            "--conf", f"spark.driver.extraJavaOptions={FAST_START}",
            "--conf", f"spark.executor.extraJavaOptions={FAST_START}",
            "--conf", "spark.sql.shuffle.partitions=2",
            "--driver-memory", "1g",
            "--executor-memory", "1g",
            str(script),
            *arguments,
        ]  # fmt: skip
        return subprocess.run(
            command, env=spark_env(self.work), capture_output=True, text=True, timeout=timeout_s, cwd=self.work
        )
