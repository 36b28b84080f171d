"""A throw-away single-member etcd for tests and benchmarks of failover (``rocketq.failover``).

    with EtcdServer(tmp_path / "etcd") as etcd:
        etcd.endpoint  # "http://127.0.0.1:<port>"

It runs the ``etcd`` binary (Debian's ``etcd-server`` package: ``/usr/bin/etcd``) on two free
loopback ports with its data in the given folder, waits until it answers, and kills it on exit.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

START_TIMEOUT_S = 20.0


def etcd_binary() -> str | None:
    """The ``etcd`` program on PATH (or /usr/bin/etcd), None when it is not installed."""
    return shutil.which("etcd") or (str(Path("/usr/bin/etcd")) if Path("/usr/bin/etcd").exists() else None)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class EtcdServer:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.endpoint = ""
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> EtcdServer:
        binary = etcd_binary()
        if binary is None:
            raise FileNotFoundError("etcd is not installed (Debian: apt-get install etcd-server)")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        client, peer = _free_port(), _free_port()
        self.endpoint = f"http://127.0.0.1:{client}"
        peer_url = f"http://127.0.0.1:{peer}"
        log_file = open(self.data_dir / "etcd.log", "ab")  # noqa: SIM115 (closed with the process)
        self._process = subprocess.Popen(
            [
                binary,
                "--name=rocketq-test",
                f"--data-dir={self.data_dir / 'data'}",
                f"--listen-client-urls={self.endpoint}",
                f"--advertise-client-urls={self.endpoint}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=rocketq-test={peer_url}",
                "--log-level=warn",
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
        log_file.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"etcd exited with {self._process.returncode}: see {self.data_dir / 'etcd.log'}")
            with (
                contextlib.suppress(OSError, ValueError),
                urllib.request.urlopen(self.endpoint + "/health", timeout=1) as answer,
            ):
                if json.loads(answer.read()).get("health") == "true":
                    return self
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"etcd did not answer within {START_TIMEOUT_S} s")
            time.sleep(0.05)

    def stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None

    def __enter__(self) -> EtcdServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
