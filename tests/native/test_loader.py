"""rocketq.native: the compiled build is loaded only when it matches its sources, and ROCKETQ_NATIVE
chooses. Each case runs in a fresh interpreter, since the choice is made once, on ``import rocketq``."""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import rocketq
from rocketq.client import push_consumer
from rocketq.native.build import main as build_main
from rocketq.native.loader import check_build, source_hash
from rocketq.native.modules import (
    C_EXTENSIONS,
    COMPILED_MODULES,
    MANIFEST_NAME,
    NATIVE_DIR,
    SHARED_LIBRARY,
    source_path,
)

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
SRC = Path(rocketq.__file__).resolve().parent.parent


def run_python(code: str, *, mode: str | None, pythonpath: Path = SRC) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "ROCKETQ_NATIVE"}
    env["PYTHONPATH"] = str(pythonpath)
    if mode is not None:
        env["ROCKETQ_NATIVE"] = mode
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def fake_build(native_dir: Path, **changes: object) -> None:
    """A build folder whose manifest matches the real sources, with empty files for its libraries."""
    names = [*COMPILED_MODULES, SHARED_LIBRARY, *C_EXTENSIONS]
    libraries = {name: f"{name.replace('.', '/')}{SUFFIX}" for name in names}
    for relative in libraries.values():
        (native_dir / relative).parent.mkdir(parents=True, exist_ok=True)
        (native_dir / relative).write_bytes(b"")
    manifest: dict[str, object] = {
        "ext_suffix": SUFFIX,
        "sources": {module: source_hash(source_path(module)) for module in COMPILED_MODULES},
        "c_sources": {module: source_hash(source_path(module, ".c")) for module in C_EXTENSIONS},
        "c_not_built": {},
        "libraries": libraries,
    }
    manifest.update(changes)
    (native_dir / MANIFEST_NAME).write_text(json.dumps(manifest))


def test_this_process_runs_what_rocketq_native_says() -> None:
    compiled = push_consumer.__file__ is not None and push_consumer.__file__.endswith(SUFFIX)
    assert compiled == rocketq.native.STATUS.compiled
    mode = os.environ.get("ROCKETQ_NATIVE")
    if mode == "required":  # make's compiled test run
        assert compiled
    elif mode == "off":  # make's plain run
        assert not compiled
        assert rocketq.native.STATUS.reason == "ROCKETQ_NATIVE=off"


def test_a_build_matching_its_sources_is_accepted(tmp_path: Path) -> None:
    fake_build(tmp_path)
    libraries, reason = check_build(tmp_path)
    assert reason == "compiled"
    assert libraries is not None
    assert set(libraries) == {*COMPILED_MODULES, SHARED_LIBRARY, *C_EXTENSIONS}


def test_a_c_extension_this_machine_could_not_build_is_left_out_and_an_edited_one_refused(tmp_path: Path) -> None:
    (module,) = C_EXTENSIONS
    fake_build(tmp_path, c_sources={}, c_not_built={module: "CompileError: no openssl/sha.h"})
    libraries, reason = check_build(tmp_path)
    assert (libraries is not None, reason) == (True, "compiled")
    fake_build(tmp_path, c_sources={module: "0" * 64})
    libraries, reason = check_build(tmp_path)
    assert libraries is None
    assert f"1 source(s) changed since the build ({module})" in reason
    fake_build(tmp_path, c_sources={}, c_not_built={})  # a build from before the module existed
    assert check_build(tmp_path) == (None, "built from another module list; rebuild")


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"ext_suffix": ".cpython-399-x86_64-linux-gnu.so"}, "this Python loads"),
        ({"sources": {"rocketq.client.message": "0" * 64}}, "another module list"),
        ({"libraries": {}}, "build incomplete"),
    ],
)
def test_a_build_that_does_not_match_is_refused_with_the_reason(
    tmp_path: Path, changes: dict[str, object], expected: str
) -> None:
    fake_build(tmp_path, **changes)
    libraries, reason = check_build(tmp_path)
    assert libraries is None
    assert expected in reason


def test_one_changed_source_refuses_the_whole_build(tmp_path: Path) -> None:
    fake_build(tmp_path)
    manifest = json.loads((tmp_path / MANIFEST_NAME).read_text())
    manifest["sources"]["rocketq.store.commit_log"] = "0" * 64
    (tmp_path / MANIFEST_NAME).write_text(json.dumps(manifest))
    libraries, reason = check_build(tmp_path)
    assert libraries is None
    assert "1 source(s) changed" in reason
    assert "rocketq.store.commit_log" in reason


def test_no_build_and_an_unreadable_manifest(tmp_path: Path) -> None:
    assert check_build(tmp_path) == (None, "not built (python -m rocketq.native.build)")
    (tmp_path / MANIFEST_NAME).write_text("{not json")
    libraries, reason = check_build(tmp_path)
    assert libraries is None
    assert reason.startswith("unreadable build manifest")


def test_off_runs_plain_python_and_a_bad_mode_is_refused() -> None:
    probe = "import rocketq, rocketq.client.push_consumer as p; print(rocketq.native.STATUS.compiled, p.__file__)"
    off = run_python(probe, mode="off")
    assert off.returncode == 0, off.stderr
    assert off.stdout.split() == ["False", str(SRC / "rocketq" / "client" / "push_consumer.py")]
    bad = run_python("import rocketq", mode="fast")
    assert bad.returncode != 0
    assert "ROCKETQ_NATIVE='fast'" in bad.stderr


def test_required_without_a_matching_build_fails_at_import(tmp_path: Path) -> None:
    # install() on an empty folder, in a process whose own import of rocketq ran with ROCKETQ_NATIVE=off
    code = (
        "import os, pathlib, rocketq.native.loader as loader; os.environ['ROCKETQ_NATIVE'] = 'required'; "
        f"loader.install(pathlib.Path({str(tmp_path)!r}))"
    )
    result = run_python(code, mode="off")
    assert result.returncode != 0
    assert "ROCKETQ_NATIVE=required, but there is no matching compiled build: not built" in result.stderr


@pytest.mark.skipif(not (NATIVE_DIR / MANIFEST_NAME).exists(), reason="no compiled build on this machine")
def test_an_edited_source_runs_interpreted_with_a_warning(tmp_path: Path) -> None:
    copy = tmp_path / "src"
    shutil.copytree(SRC / "rocketq", copy / "rocketq", ignore=shutil.ignore_patterns("__pycache__"))
    probe = "import rocketq, rocketq.store.commit_log as c; print(rocketq.native.STATUS.compiled, c.__file__)"
    fresh = run_python(probe, mode=None, pythonpath=copy)
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout.split()[0] == "True"
    assert fresh.stdout.split()[1].endswith(SUFFIX)

    edited = copy / "rocketq" / "store" / "commit_log.py"
    edited.write_text(edited.read_text() + "\n# edited after the build\n")
    stale = run_python(probe, mode=None, pythonpath=copy)
    assert stale.returncode == 0, stale.stderr
    assert stale.stdout.split() == ["False", str(edited)]
    assert "rocketq runs interpreted" in stale.stderr
    assert "rocketq.store.commit_log" in stale.stderr
    required = run_python(probe, mode="required", pythonpath=copy)
    assert required.returncode != 0
    assert "1 source(s) changed" in required.stderr


def test_the_public_client_classes_can_be_subclassed(tmp_path: Path) -> None:
    # compiled classes refuse interpreted subclasses unless they allow them (mypyc_attr)
    from rocketq.client import ClientConfig, ConsumerConfig, ConsumeStatus, Message, Producer, PushConsumer
    from rocketq.client.sync import SyncProducer, SyncPullConsumer, SyncPushConsumer

    class TracedMessage(Message):
        def label(self) -> str:
            return f"{self.topic}/{self.tags}"

    class NamedProducer(Producer):
        def describe(self) -> str:
            return f"producer of {self.config.group}"

    class CountingConsumer(PushConsumer):
        pass

    assert TracedMessage("T", b"x", tags="a").label() == "T/a"
    assert NamedProducer(group="g").describe() == "producer of g"
    config = ConsumerConfig(group="g", client=ClientConfig(namesrv_addr="127.0.0.1:1"))
    consumer = CountingConsumer(config, lambda messages: ConsumeStatus.CONSUME_SUCCESS)
    assert isinstance(consumer, PushConsumer)
    for base in (SyncProducer, SyncPushConsumer, SyncPullConsumer):  # made without __init__: no cluster here
        subclass = type("Sub", (base,), {})
        assert type(base.__new__(subclass)) is subclass


@pytest.mark.skipif(not (NATIVE_DIR / MANIFEST_NAME).exists(), reason="no compiled build on this machine")
def test_the_build_does_nothing_when_up_to_date(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if check_build(NATIVE_DIR)[0] is None:
        pytest.skip("the build is stale (a source was edited since); make rebuilds it")
    manifest = (NATIVE_DIR / MANIFEST_NAME).read_bytes()
    assert build_main(["--if-stale", "--work-dir", str(tmp_path / "work")]) == 0
    assert "up to date" in capsys.readouterr().out
    assert (NATIVE_DIR / MANIFEST_NAME).read_bytes() == manifest
    assert (tmp_path / "work.lock").exists() and not (tmp_path / "work").exists()


def test_a_listed_source_that_is_gone_counts_as_changed(tmp_path: Path) -> None:
    copy = tmp_path / "src"
    shutil.copytree(SRC / "rocketq", copy / "rocketq", ignore=shutil.ignore_patterns("__pycache__", "_native"))
    (copy / "rocketq" / "client" / "latency.py").unlink()
    native_dir = tmp_path / "native"
    fake_build(native_dir)
    probe = f"import pathlib, rocketq.native.loader as l; print(l.check_build(pathlib.Path({str(native_dir)!r}))[1])"
    result = run_python(probe, mode="off", pythonpath=copy)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1 source(s) changed since the build (rocketq.client.latency); rebuild"
