"""The public client classes keep their docstrings and signatures, compiled or not: ``help()`` and
``inspect`` show what the source says, ``async def`` methods included. Runs in
whichever mode the suite runs in (``make test`` runs both), and checks the compiled build in a child
interpreter when there is one."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rocketq.client
from rocketq.native.loader import check_build
from rocketq.native.modules import NATIVE_DIR

PUBLIC_CLASSES = sorted(
    name
    for name in rocketq.client.__all__
    if inspect.isclass(getattr(rocketq.client, name)) and not issubclass(getattr(rocketq.client, name), BaseException)
)
ROOT = Path(__file__).resolve().parent.parent.parent
CLIENTS = [
    "Producer",
    "TransactionProducer",
    "PushConsumer",
    "PullConsumer",
    "SyncProducer",
    "SyncTransactionProducer",
    "SyncPushConsumer",
    "SyncPullConsumer",
    "AdminClient",
    "SyncAdminClient",
    "QueueReader",
    "SyncQueueReader",
]


def describe() -> dict[str, dict[str, object]]:
    """What ``help()`` draws on for each public class: its docstring, its parameters, and which of its
    public methods have no docstring (plain ones, and ``async def`` ones apart); and the same for
    ``SyncProducer.send``."""
    described: dict[str, dict[str, object]] = {}
    for name in PUBLIC_CLASSES:
        cls = getattr(rocketq.client, name)
        methods = {
            member: value for member, value in vars(cls).items() if not member.startswith("_") and callable(value)
        }
        bare = sorted(
            member for member, value in methods.items() if not (getattr(value, "__doc__", None) or "").strip()
        )
        described[name] = {
            "doc": (cls.__doc__ or "").strip(),
            "parameters": parameters(cls),
            "undocumented": [member for member in bare if not inspect.iscoroutinefunction(methods[member])],
            "undocumented_async": [member for member in bare if inspect.iscoroutinefunction(methods[member])],
        }
    for twin in ("SyncProducer.send", "Producer.send", "Producer.send_batch", "PushConsumer.start"):
        owner, name = twin.split(".")
        method = getattr(getattr(rocketq.client, owner), name)
        described[twin] = {
            "doc": inspect.getdoc(method),
            "parameters": parameters(method),
            "signature": str(inspect.signature(method)),
            "coroutine": inspect.iscoroutinefunction(method),
        }
    return described


def parameters(function: object) -> list[str] | None:
    try:
        return list(inspect.signature(function).parameters)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def check(described: dict[str, dict[str, object]]) -> None:
    """Every client class documented, with real parameters; every public method documented, ``async
    def`` ones included (in the compiled build through ``rocketq.native.coroutines``)."""
    for name in CLIENTS:
        entry = described[name]
        assert entry["doc"], f"{name} has no docstring"
        assert entry["undocumented"] == [], f"{name}: public methods without a docstring"
        assert entry["undocumented_async"] == [], f"{name}: public async methods without a docstring"
        assert entry["parameters"] is not None and "args" not in entry["parameters"], (name, entry["parameters"])
    assert described["SyncProducer"]["parameters"] == ["config", "group", "namesrv_addr"]
    assert str(described["SyncProducer"]["doc"]).startswith("Blocking twin of ``Producer``")
    assert described["SyncProducer.send"]["parameters"] == ["self", "message", "timeout", "idempotent"]
    assert "broker's answer" in str(described["SyncProducer.send"]["doc"])
    assert described["Producer.send"]["parameters"] == ["self", "message", "timeout", "idempotent"]
    assert described["Producer.send"]["coroutine"] is False  # a method returning the send's coroutine
    assert "broker's answer" in str(described["Producer.send"]["doc"])


def test_the_clients_document_themselves_in_this_mode() -> None:
    check(describe())


@pytest.mark.skipif(check_build(NATIVE_DIR)[0] is None, reason="no compiled build matching the sources")
def test_the_compiled_clients_document_themselves() -> None:
    code = (
        "import json, rocketq.native as n; from tests.native.test_docstrings import describe;"
        " assert n.STATUS.compiled, n.STATUS.reason; print(json.dumps(describe()))"
    )
    env = {**os.environ, "ROCKETQ_NATIVE": "required"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    compiled = json.loads(run.stdout)
    check(compiled)
    plain = json.loads(json.dumps(describe()))
    for name in CLIENTS:  # and the compiled build says what the plain source says
        for key in ("doc", "parameters", "undocumented", "undocumented_async"):
            assert compiled[name][key] == plain[name][key], (name, key)
    for twin in ("Producer.send_batch", "PushConsumer.start"):  # annotations included
        assert compiled[twin] == plain[twin], twin
    for twin in ("SyncProducer.send", "Producer.send"):  # mypyc's own text signature: no annotations
        del compiled[twin]["signature"], plain[twin]["signature"]
        assert compiled[twin] == plain[twin], twin
