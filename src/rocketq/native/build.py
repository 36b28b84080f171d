"""Compile the message-path modules with mypyc: ``python -m rocketq.native.build``.

Needs mypy (which brings mypyc), setuptools, a C compiler and the Python headers; ``make`` runs it after
installing the dev extras. The result goes to ``rocketq/_native/``: one shared library for the group,
one small library per module, and a manifest with the hash of each source it was compiled from (see
``rocketq.native.loader``). The C extensions of ``C_EXTENSIONS`` are built into the same folder, each
only where this machine has what it needs (a missing header or library is said in one line, and the
build goes on without that module). The previous build is replaced only once the new one is complete.

Exit status: 0 built (or up to date with ``--if-stale``); 2 this machine cannot build (no C compiler,
no Python headers, no mypyc), said in one line, and rocketq runs interpreted; 1 the build failed.
"""

from __future__ import annotations

import argparse
import fcntl
import importlib.machinery
import importlib.util
import json
import os
import shutil
import sys
import sysconfig
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final

from rocketq.native.coroutines import build_entries, public_client_classes
from rocketq.native.docstrings import add_docstrings, class_docstrings
from rocketq.native.loader import check_build, source_hash
from rocketq.native.modules import (
    C_EXTENSIONS,
    COMPILED_MODULES,
    GROUP_NAME,
    MANIFEST_NAME,
    NATIVE_DIR,
    source_path,
)


def _library_paths(build_lib: Path) -> dict[str, str]:
    """Module name -> library path relative to ``build_lib``, for every library the build made."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    libraries = {}
    for library in build_lib.rglob(f"*{suffix}"):
        relative = library.relative_to(build_lib)
        name = ".".join(relative.parts)[: -len(suffix)]
        libraries[name] = str(relative)
    return libraries


CANNOT_BUILD: Final = 2


def missing_tools() -> str | None:
    """What this machine lacks to build the compiled modules, or None."""
    if importlib.util.find_spec("mypyc") is None or importlib.util.find_spec("setuptools") is None:
        return "mypy and setuptools are needed (pip install -e '.[dev]')"
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler})"
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not headers.is_file():
        return f"no Python headers ({headers}; Debian: apt install python3-dev)"
    return None


def _parallel(build_ext: type[Any]) -> type[Any]:
    """setuptools' build_ext, but compiling the C files of one extension in parallel (its ``parallel``
    only spreads whole extensions, and the group's one extension holds nearly all the code)."""

    class ParallelBuildExt(build_ext):  # type: ignore[misc]
        def build_extensions(self) -> None:
            compile_files = self.compiler.compile

            def compile_in_parallel(sources: list[str], *args: Any, **kwargs: Any) -> list[str]:
                largest_first = sorted(sources, key=lambda source: -Path(source).stat().st_size)
                with ThreadPoolExecutor(os.cpu_count() or 1) as pool:  # each file is a gcc process
                    objects = pool.map(lambda source: compile_files([source], *args, **kwargs), largest_first)
                    return [name for names in objects for name in names]

            self.compiler.compile = compile_in_parallel
            super().build_extensions()

    return ParallelBuildExt


def _build_c_extensions(
    setuptools: dict[str, type[Any]], work_dir: Path, staging: Path
) -> tuple[dict[str, str], dict[str, str]]:
    """Build each of ``C_EXTENSIONS`` into ``staging``: the hashes of the sources built, and why each
    other one was not (each is built on its own, so one that cannot be does not stop the rest).
    ``setuptools``: its ``Extension``, ``Distribution`` and ``build_ext`` classes."""
    built: dict[str, str] = {}
    not_built: dict[str, str] = {}
    for module, libraries in C_EXTENSIONS.items():
        source = source_path(module, ".c")
        source_digest = source_hash(source)
        extension = setuptools["Extension"](
            module, [str(source)], libraries=list(libraries), extra_compile_args=["-Wall"]
        )
        command = setuptools["build_ext"](
            setuptools["Distribution"]({"name": "rocketq-native-c", "ext_modules": [extension]})
        )
        command.build_lib = str(staging)
        command.build_temp = str(work_dir / "obj-c")
        try:
            command.ensure_finalized()
            command.run()
        except Exception as exc:  # setuptools' CompileError / LinkError: a header or library is missing
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
            print(f"rocketq: {module} not built ({reason}); its plain Python twin runs instead", file=sys.stderr)
            not_built[module] = reason
        else:
            built[module] = source_digest
    return built, not_built


def build(work_dir: Path, native_dir: Path = NATIVE_DIR, *, opt_level: str = "3") -> float:
    """Compile every module of ``COMPILED_MODULES`` into ``native_dir``; returns the seconds taken."""
    from mypyc.build import mypycify  # build-time only dependencies
    from setuptools import Distribution, Extension  # type: ignore[import-untyped]
    from setuptools.command.build_ext import build_ext  # type: ignore[import-untyped]

    started = time.monotonic()
    paths = [source_path(module) for module in COMPILED_MODULES]
    hashes = {module: source_hash(path) for module, path in zip(COMPILED_MODULES, paths, strict=True)}
    shutil.rmtree(work_dir, ignore_errors=True)
    work_dir.mkdir(parents=True)
    staging = work_dir / "lib"
    previous_cwd = Path.cwd()
    os.chdir(work_dir)  # mypy's cache and mypyc's C files stay in the work folder
    try:
        extensions = mypycify(
            [str(path) for path in paths],
            opt_level=opt_level,
            group_name=GROUP_NAME,
            target_dir=str(work_dir / "c"),
            multi_file=True,  # a C file per module, compiled in parallel below
        )
        add_docstrings(sorted((work_dir / "c").glob("*.c")), class_docstrings(paths))  # mypyc writes none
        command = _parallel(build_ext)(Distribution({"name": "rocketq-native", "ext_modules": extensions}))
        command.parallel = os.cpu_count() or 1
        command.build_lib = str(staging)
        command.build_temp = str(work_dir / "obj")
        command.ensure_finalized()
        command.run()
        tools = {"Extension": Extension, "Distribution": Distribution, "build_ext": build_ext}
        c_sources, c_not_built = _build_c_extensions(tools, work_dir, staging)
    finally:
        os.chdir(previous_cwd)
    manifest = {
        "ext_suffix": importlib.machinery.EXTENSION_SUFFIXES[0],
        "python": sys.version,
        "sources": hashes,
        "c_sources": c_sources,
        "c_not_built": c_not_built,
        "coroutine_methods": build_entries(
            zip(COMPILED_MODULES, paths, strict=True), public_client_classes(source_path("rocketq.client.__init__"))
        ),
        "libraries": _library_paths(staging),
    }
    (staging / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1, sort_keys=True))
    libraries, reason = check_build(staging)
    if libraries is None:  # a source was edited during the build, or a library is missing
        raise RuntimeError(f"the new build does not match: {reason}")
    old = native_dir.with_name(native_dir.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if native_dir.exists():
        native_dir.rename(old)
    shutil.move(str(staging), native_dir)
    shutil.rmtree(old, ignore_errors=True)
    shutil.rmtree(work_dir, ignore_errors=True)  # the C files and objects (about 50 MB) are not reused
    return time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rocketq.native.build", description=__doc__.splitlines()[0])
    parser.add_argument("--work-dir", type=Path, default=Path("build") / "mypyc", help="C files and objects")
    parser.add_argument("--if-stale", action="store_true", help="do nothing when the build matches its sources")
    args = parser.parse_args(argv)
    work_dir: Path = args.work_dir.resolve()
    work_dir.parent.mkdir(parents=True, exist_ok=True)
    with (work_dir.parent / f"{work_dir.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second make waits, then finds the build up to date
        return _build_once(work_dir, if_stale=args.if_stale)


def _build_once(work_dir: Path, *, if_stale: bool) -> int:
    if if_stale and check_build(NATIVE_DIR)[0] is not None:
        print("rocketq: compiled modules are up to date")
        return 0
    lacking = missing_tools()
    if lacking is not None:
        print(f"rocketq: compiled modules not built: {lacking}; running plain Python", file=sys.stderr)
        return CANNOT_BUILD
    print(
        f"rocketq: compiling {len(COMPILED_MODULES)} modules with mypyc (after an install or a change to them;"
        " about 1.5-3 minutes on 2 cores)...",
        flush=True,
    )
    try:
        seconds = build(work_dir)
    except (Exception, SystemExit) as exc:  # any failure (mypyc exits on errors): run interpreted, say why
        reason = f"{type(exc).__name__}: {exc}"
        print(f"rocketq: compiled modules not built ({reason}); running plain Python", file=sys.stderr)
        return 1
    print(f"rocketq: compiled {len(COMPILED_MODULES)} modules in {seconds:.0f} s into {NATIVE_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
