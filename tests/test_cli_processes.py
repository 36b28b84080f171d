"""The command line as users run it: real processes, stopped with SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from click.testing import CliRunner

from rocketq.admin.cli import admin

ROCKETQ = [sys.executable, "-m", "rocketq.cli"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[str], timeout: float = 60) -> None:
    """Until something listens on ``port``; fails at once, with its stderr, when ``process`` exits first.
    (The timeout only bounds a hung start: a busy machine may take long to start the servers.)"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        if process.poll() is not None:
            _, stderr = process.communicate()
            raise AssertionError(f"exited with {process.returncode} before listening on {port}: {stderr}")
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


def test_up_serves_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    namesrv_port, broker_port = free_port(), free_port()
    store = tmp_path / "store"
    process = subprocess.Popen(
        [*ROCKETQ, "up", "--namesrv-port", str(namesrv_port), "--broker-port", str(broker_port), "--store", str(store)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_port(namesrv_port, process)
        wait_for_port(broker_port, process)
        namesrv = f"127.0.0.1:{namesrv_port}"
        deadline = time.monotonic() + 10
        while True:  # the broker registers right after it starts listening
            sent = CliRunner().invoke(admin, ["sendMessage", "-n", namesrv, "-t", "UpTopic", "-p", "hi", "--json"])
            if sent.exit_code == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert sent.exit_code == 0, sent.output
        assert (store / "abort").exists()
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    assert "rocketq is up" in stderr
    assert not (store / "abort").exists()  # clean shutdown


def test_broker_reads_a_broker_conf(tmp_path: Path) -> None:
    namesrv_port, broker_port, ha_port = free_port(), free_port(), free_port()
    conf = tmp_path / "broker.conf"
    conf.write_text(
        f"brokerClusterName=ConfCluster\nbrokerName=broker-conf\nlistenPort={broker_port}\nhaListenPort={ha_port}\n"
        f"namesrvAddr=127.0.0.1:{namesrv_port}\nstorePathRootDir={tmp_path / 'store'}\nbrokerIP1=127.0.0.1\n"
    )
    env = dict(os.environ)
    namesrv = subprocess.Popen(
        [*ROCKETQ, "namesrv", "-p", str(namesrv_port)], stderr=subprocess.PIPE, text=True, env=env
    )
    broker = subprocess.Popen([*ROCKETQ, "broker", "-c", str(conf)], stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_for_port(namesrv_port, namesrv)
        wait_for_port(broker_port, broker)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            listed = CliRunner().invoke(admin, ["clusterList", "-n", f"127.0.0.1:{namesrv_port}", "--json"])
            if "broker-conf" in listed.output:
                break
            time.sleep(0.1)
        assert '"cluster": "ConfCluster"' in listed.output
    finally:
        for process in (broker, namesrv):
            process.send_signal(signal.SIGTERM)
        for process in (broker, namesrv):
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
    assert broker.returncode == 0 and namesrv.returncode == 0
