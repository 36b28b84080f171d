"""``rocketq dashboard`` and ``rocketq up --dashboard`` as users run them (real processes, SIGTERM), and
``rocketq dashboard`` on an install without the dashboard's packages."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rocketq.testing import ThreadedCluster, wait_until

ROCKETQ = [sys.executable, "-m", "rocketq.cli"]
ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def running(*args: str) -> Iterator[tuple[subprocess.Popen[str], queue.Queue[str]]]:
    """The command, its stderr lines arriving on a queue; SIGTERM at the end (killed if it hangs)."""
    process = subprocess.Popen([*ROCKETQ, *args], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    lines: queue.Queue[str] = queue.Queue()
    assert process.stderr is not None
    reader = threading.Thread(target=lambda: [lines.put(line) for line in process.stderr or ()], daemon=True)
    reader.start()
    try:
        yield process, lines
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def url_in(lines: queue.Queue[str], pattern: str) -> str:
    """The dashboard URL of the first line matching ``pattern`` (which has one group: the URL)."""
    while True:
        line = lines.get(timeout=60)
        match = re.search(pattern, line)
        if match:
            return match.group(1)


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return str(answer.read().decode())


def test_the_dashboard_command_serves_a_running_cluster(tmp_path: Path) -> None:
    with (
        ThreadedCluster(tmp_path) as cluster,
        running("dashboard", "-n", cluster.namesrv_addr, "--port", "0") as (
            process,
            lines,
        ),
    ):
        url = url_in(lines, r"dashboard of .* at (http://\S+) ")
        assert "broker-a" in get(url)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0


def test_up_with_the_dashboard(tmp_path: Path) -> None:
    args = ["up", "--namesrv-port", "0", "--broker-port", "0", "--store", str(tmp_path / "store")]
    with running(*args, "--dashboard", "--dashboard-port", "0") as (process, lines):
        url = url_in(lines, r"dashboard: (http://\S+)")

        def registered() -> bool:
            return len(json.loads(get(url + "api/cluster"))["brokers"]) == 1

        wait_until(registered, timeout_s=20, interval_s=0.2)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0


CLIENT_ONLY = r"""
import sys

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "aiohttp":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Refuse())
from rocketq.cli import main

main(sys.argv[1:])
"""


def test_without_aiohttp_the_command_says_what_to_install() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", CLIENT_ONLY, *args]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)

    listed = cli("--help")
    assert listed.returncode == 0 and "dashboard" in listed.stdout
    refused = cli("dashboard", "-n", "127.0.0.1:9876")
    assert refused.returncode == 1
    assert "pip install 'rocketq[dashboard]'" in refused.stderr and "Traceback" not in refused.stderr
