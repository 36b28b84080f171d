"""The server commands as users run them: broker.conf handling, one-line errors, the local store's size.

Real processes on port 0 (each prints the address it got), stopped with SIGTERM.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocketq.admin.cli import admin
from rocketq.cli import explain
from rocketq.testing import wait_until

ROCKETQ = [sys.executable, "-m", "rocketq.cli"]
MiB = 1024 * 1024


@contextmanager
def running(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """A rocketq server process, its stderr lines read up to the line announcing it serves."""
    process = subprocess.Popen(
        [*ROCKETQ, *args], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env or dict(os.environ)
    )
    assert process.stderr is not None
    lines: list[str] = []
    try:
        for line in process.stderr:
            lines.append(line)
            if re.match(r"rocketq is up|Broker \S+ serving at|NameServer listening on", line):
                break
        assert process.poll() is None, "".join(lines)
        yield process, lines
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def failing(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ROCKETQ, *args], capture_output=True, text=True, timeout=120, check=False)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    """The command's error line, after checking it failed with exit status 1 and no traceback."""
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    [line] = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    return line


def send_one(announced: str, topic: str) -> None:
    """Send a message through the NameServer ``rocketq up`` announced (files are made at the first one)."""
    namesrv = re.search(r"NameServer (\S+),", announced)
    assert namesrv is not None, announced
    sent = CliRunner().invoke(admin, ["sendMessage", "-n", namesrv.group(1), "-t", topic, "-p", "hi"])
    assert sent.exit_code == 0, sent.output


def test_up_sizes_its_store_for_a_laptop(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with running("up", "--namesrv-port", "0", "--broker-port", "0", "--store", str(store)) as (_, lines):
        send_one(lines[-1], "Small")
    [commit_log] = (store / "commitlog").iterdir()
    assert commit_log.stat().st_size == 64 * MiB
    [index] = (store / "index").iterdir()
    assert index.stat().st_size < 5 * MiB
    queues = [file for file in (store / "consumequeue" / "Small").rglob("0" * 20)]
    assert queues and all(file.stat().st_size == 1_000_000 for file in queues)


def test_up_keeps_the_sizes_of_a_store_made_with_rocketmqs(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / "commitlog").mkdir(parents=True)
    with (store / "commitlog" / ("0" * 20)).open("wb") as made:  # (sparse: no GiB written)
        made.truncate(1024 * MiB)
    with running("up", "--namesrv-port", "0", "--broker-port", "0", "--store", str(store)) as (_, lines):
        send_one(lines[-1], "Kept")
    assert any("made with RocketMQ's file sizes: keeping them" in line for line in lines)
    queues = list((store / "consumequeue" / "Kept").rglob("0" * 20))
    assert queues and all(file.stat().st_size == 6_000_000 for file in queues)


def test_up_takes_a_broker_conf_and_names_unknown_keys(tmp_path: Path) -> None:
    store = tmp_path / "from-conf"
    conf = tmp_path / "broker.conf"
    conf.write_text(
        f"storePathRootDir={store}\nbrokerName=conf-\\\n  broker\nmapedFileSizeCommitLog=8388608\n"
        "flushIntervalComitLog=100\nflushDiskType=SYNC_FLUSH\n"
    )
    args = ("up", "-c", str(conf), "--namesrv-port", "0", "--broker-port", "0", "--log-level", "info")
    with running(*args) as (_, lines):
        send_one(lines[-1], "Conf")
    text = "".join(lines)
    assert "flushIntervalComitLog (did you mean flushIntervalCommitLog?)" in text
    assert f"store {store}, sync flush" in lines[-1]
    assert "broker conf-broker" in text  # an INFO line: --log-level after the subcommand took effect
    [commit_log] = (store / "commitlog").iterdir()
    assert commit_log.stat().st_size == 8 * MiB  # the file's size wins over the local default


def test_broker_registers_with_the_name_servers_in_namesrv_addr(tmp_path: Path) -> None:
    with running("namesrv", "-p", "0", "--host", "127.0.0.1") as (_, namesrv_lines):
        address = namesrv_lines[-1].split()[-1]
        env = {**os.environ, "NAMESRV_ADDR": address}
        with running("broker", "-p", "0", "--host", "127.0.0.1", "--store", str(tmp_path), env=env) as (_, lines):
            assert not any("registers with no NameServer" in line for line in lines)

            def listed() -> bool:
                result = CliRunner().invoke(admin, ["clusterList", "-n", address, "--json"])
                return "broker-a" in result.output

            wait_until(listed, 20, what="the broker in clusterList")


def test_a_broker_without_name_servers_warns(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "NAMESRV_ADDR"}
    with running("broker", "-p", "0", "--host", "127.0.0.1", "--store", str(tmp_path), env=env) as (_, lines):
        assert any("registers with no NameServer" in line and "NAMESRV_ADDR" in line for line in lines)


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("haListenPort=0\n")  # a free HA port: listenPort+1 may be anybody's on a busy host
    store = tmp_path / "store"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = failing(
            "broker",
            "-c",
            str(conf),
            "-n",
            "127.0.0.1:1",
            "--host",
            "127.0.0.1",
            "-p",
            str(port),
            "--store",
            str(store),
        )
    line = one_line_error(result)
    assert str(port) in line and "address already in use" in line and "listenPort" in line
    assert not (store / "abort").exists()  # the store it opened was closed again


def test_a_locked_store_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "lock").touch()
    fd = os.open(tmp_path / "lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        result = failing("broker", "-n", "127.0.0.1:1", "-p", "0", "--store", str(tmp_path))
    finally:
        os.close(fd)
    line = one_line_error(result)
    assert f"store {tmp_path} is locked by another process" in line and "--store" in line


def test_an_unusable_store_folder_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a-file").touch()
    result = failing("up", "--namesrv-port", "0", "--broker-port", "0", "--store", str(tmp_path / "a-file" / "store"))
    line = one_line_error(result)
    assert "a-file" in line and "--store" in line


@pytest.mark.parametrize(
    ("conf", "expected"),
    [
        ("listenPort=ten\n", "setting listenPort='ten': expected a number"),
        ("brokerRole=SLAVE\n", "setting brokerRole='SLAVE': a SLAVE needs a brokerId above 0, not 0"),
    ],
)
def test_a_bad_setting_is_one_line(tmp_path: Path, conf: str, expected: str) -> None:
    path = tmp_path / "broker.conf"
    path.write_text(conf)
    line = one_line_error(failing("broker", "-c", str(path)))
    assert line.startswith(f"Error: {expected}") and "broker.conf" in line


def test_an_acl_file_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "broker.conf"
    path.write_text("aclEnable=true\n")  # (aclFile: plain_acl.yml beside it, missing)
    line = one_line_error(failing("broker", "-c", str(path), "-p", "0", "--store", str(tmp_path / "store")))
    assert "plain_acl.yml" in line and "docs/acl.md" in line


def test_debug_logging_adds_the_traceback(tmp_path: Path) -> None:
    path = tmp_path / "broker.conf"
    path.write_text("brokerRole=SLAVE\n")
    result = failing("broker", "-c", str(path), "--log-level", "debug")
    assert result.returncode == 1 and "Traceback" in result.stderr and "SettingError" in result.stderr


def test_an_unwritable_store_is_explained() -> None:
    """(Tests run as root here, who may write anywhere: the line for the error the OS gives others.)"""
    line = explain(PermissionError(errno.EACCES, "Permission denied", "/srv/store/commitlog"))
    assert line == (
        "cannot write (/srv/store/commitlog): Permission denied; choose a folder this user can write"
        " (--store, storePathRootDir)."
    )
    assert explain(RuntimeError("a bug")) is None  # (not a user's mistake: the traceback stays)


def test_up_with_slave_starts_a_slave_that_copies_the_masters_log(tmp_path: Path) -> None:
    store = tmp_path / "store"
    args = ("up", "--namesrv-port", "0", "--broker-port", "0", "--store", str(store), "--slave")
    with running(*args) as (process, lines):
        assert process.stderr is not None
        slave_line = process.stderr.readline()
        assert re.match(r"\s+slave of broker-a: Broker \S+ \(brokerId 1, store .*store-slave\)", slave_line), slave_line
        send_one(lines[-1], "Copied")
        queues = store.with_name("store-slave") / "consumequeue" / "Copied"
        wait_until(lambda: queues.is_dir() and any(queues.rglob("0" * 20)), timeout_s=30)
    master_log = (store / "commitlog" / ("0" * 20)).read_bytes()
    slave_log = (tmp_path / "store-slave" / "commitlog" / ("0" * 20)).read_bytes()
    assert slave_log.rstrip(b"\0") == master_log.rstrip(b"\0") != b""
