"""A client-only install: ``pip install rocketq`` brings what the clients need and nothing of the
servers' (numpy, numba and llvmlite alone are about 280 MB); those come with ``rocketq[server]``.

The client runs in a child interpreter in which importing any server-only package fails (a
``sys.meta_path`` finder refuses them), against a cluster running in this test's process."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import tomllib
from pathlib import Path

from rocketq.client.admin import AdminClient
from rocketq.testing import LocalCluster

ROOT = Path(__file__).resolve().parent.parent
SERVER_ONLY = ("numpy", "numba", "llvmlite", "mmh3", "uvloop", "javaproperties")

CHILD = r"""
import json, sys

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (a client-only install)", name=name)
        return None

sys.meta_path.insert(0, Refuse())

from rocketq.client import ConsumerConfig, ClientConfig, ConsumeFromWhere, Message, MessageSelector
from rocketq.client import SyncProducer, SyncPullConsumer

with SyncProducer(group="SplitP", namesrv_addr=NAMESRV) as producer:
    sent = [producer.send(Message("Split", f"m{i}".encode(), tags="T")).msg_id for i in range(3)]
config = ConsumerConfig(
    group="SplitC",
    client=ClientConfig(namesrv_addr=NAMESRV),
    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
)
got = []
with SyncPullConsumer(config) as consumer:
    consumer.subscribe("Split", MessageSelector.by_tag("T"))
    consumer.start()
    for message in consumer:
        got.append(message.body.decode())
        if len(got) == len(sent):
            break
loaded = sorted({name.split(".")[0] for name in sys.modules} & set(BLOCKED))
print(json.dumps({"got": sorted(got), "loaded": loaded}))
"""


def test_the_base_dependencies_leave_the_servers_packages_out() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {_name(requirement) for requirement in project["dependencies"]}
    server = {_name(requirement) for requirement in project["optional-dependencies"]["server"]}
    assert base.isdisjoint(SERVER_ONLY), base & set(SERVER_ONLY)
    assert {"numpy", "numba", "mmh3", "uvloop", "javaproperties"} <= server
    dev = project["optional-dependencies"]["dev"]
    assert any(_name(requirement) == "rocketq" and "server" in requirement for requirement in dev)


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9_.-]+", requirement)
    assert match is not None
    return match.group(0).lower().replace("_", "-")


async def test_a_client_without_the_server_packages_sends_and_receives(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path) as cluster:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.update_topic("Split", cluster="DefaultCluster", read_queues=2, write_queues=2)
        code = f"BLOCKED = {SERVER_ONLY!r}\nNAMESRV = {cluster.namesrv_addr!r}\n{CHILD}"
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", code, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        stdout, stderr = await asyncio.wait_for(child.communicate(), 120)
    assert child.returncode == 0, stderr.decode()
    answer = json.loads(stdout.decode().strip().splitlines()[-1])
    assert answer == {"got": ["m0", "m1", "m2"], "loaded": []}


ADMIN_CHILD = r"""
import sys

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (a client-only install)", name=name)
        return None

sys.meta_path.insert(0, Refuse())
from rocketq.cli import main

main(sys.argv[1:])
"""


async def _cli(*args: str) -> tuple[int, str]:
    code = f"BLOCKED = {SERVER_ONLY!r}\n{ADMIN_CHILD}"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    output, _ = await asyncio.wait_for(child.communicate(), 120)
    assert child.returncode is not None
    return child.returncode, output.decode()


async def test_the_admin_command_runs_without_the_server_packages(tmp_path: Path) -> None:
    async with LocalCluster(tmp_path) as cluster:
        async with AdminClient(cluster.namesrv_addr) as admin:
            await admin.update_topic("SplitAdmin", cluster="DefaultCluster")
        code, output = await _cli("admin", "topicList", "-n", cluster.namesrv_addr)
    assert code == 0, output
    assert "SplitAdmin" in output
    code, output = await _cli("up", "--help")  # a server command says what to install
    assert code == 1
    assert "pip install 'rocketq[server]'" in output and "Traceback" not in output
    code, output = await _cli("--help")  # and the command list still shows every command
    assert code == 0, output
    assert all(name in output for name in ("admin", "bench", "broker", "namesrv", "up")), output
