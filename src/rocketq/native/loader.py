"""Load the compiled modules when a build matches its sources; run the plain Python otherwise.

``install()`` runs first thing when ``rocketq`` is imported. It reads the build's manifest and puts a
finder in front of ``sys.meta_path`` that loads each compiled module from the build folder, but only
when every compiled module's source still has the hash it had when it was compiled, and the build is
for this Python. The compiled modules call each other directly, so it is all or nothing: a single
edited source means the whole message path runs interpreted (with a warning saying to rebuild) until
the next build. The build's C extensions (``C_EXTENSIONS``) are held to the hashes of their ``.c``
sources the same way; one the build could not make on this machine is recorded as such, and its
importer falls back to its plain Python twin.

``ROCKETQ_NATIVE`` chooses: ``auto`` (default) loads a matching build if there is one, ``off`` never
loads it, ``required`` raises ImportError when there is no matching build (the compiled test run uses
it, so it cannot quietly test the interpreted code).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, cast

from rocketq.native.coroutines import Entry, document_module
from rocketq.native.modules import (
    C_EXTENSIONS,
    COMPILED_MODULES,
    MANIFEST_NAME,
    NATIVE_DIR,
    SHARED_LIBRARY,
    source_path,
)

if TYPE_CHECKING:
    from importlib.abc import Loader

log = logging.getLogger(__name__)

MODES: Final = ("auto", "off", "required")


@dataclass(frozen=True, slots=True)
class NativeStatus:
    """Whether this process runs the compiled modules, and if not, why."""

    compiled: bool
    reason: str


class _CompiledModuleFinder:
    """Finds the compiled modules (and their shared library) in the build folder: a ``sys.meta_path``
    finder (duck-typed: ``importlib.abc`` alone costs more to import than the rest of this module)."""

    def __init__(self, libraries: dict[str, Path], coroutines: dict[str, dict[str, Entry]]) -> None:
        self._libraries = libraries
        self._coroutines = coroutines

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        library = self._libraries.get(fullname)
        if library is None:
            return None
        spec = importlib.util.spec_from_file_location(fullname, library)
        entries = self._coroutines.get(fullname)
        if spec is not None and spec.loader is not None and entries:
            spec.loader = cast("Loader", _DocumentingLoader(spec.loader, entries))  # duck-typed, as above
        return spec


class _DocumentingLoader:
    """Loads a compiled module, then gives its classes' ``async def`` methods their docstrings and
    signatures (``rocketq.native.coroutines``)."""

    def __init__(self, loader: Any, entries: dict[str, Entry]) -> None:
        self._loader = loader
        self._entries = entries

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        missing = document_module(module, self._entries)
        if missing:
            log.warning("compiled %s: no docstring for %s", module.__name__, ", ".join(missing))


def source_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _source_hash_or_none(module: str, suffix: str = ".py") -> str | None:
    try:
        return source_hash(source_path(module, suffix))
    except OSError:  # a listed source that is gone: not the build's source any more
        return None


def check_build(native_dir: Path) -> tuple[dict[str, Path] | None, str]:
    """The libraries of a build in ``native_dir`` that matches its sources, or None and why not."""
    try:
        manifest = json.loads((native_dir / MANIFEST_NAME).read_text())
    except FileNotFoundError:
        return None, "not built (python -m rocketq.native.build)"
    except (OSError, ValueError) as exc:
        return None, f"unreadable build manifest: {exc}"
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    if manifest.get("ext_suffix") != suffix:
        return None, f"built for {manifest.get('ext_suffix')}, this Python loads {suffix}"
    sources: dict[str, str] = manifest.get("sources", {})
    c_sources: dict[str, str] = manifest.get("c_sources", {})
    c_not_built: dict[str, str] = manifest.get("c_not_built", {})
    if sorted(sources) != sorted(COMPILED_MODULES) or sorted([*c_sources, *c_not_built]) != sorted(C_EXTENSIONS):
        return None, "built from another module list; rebuild"
    changed = [module for module in COMPILED_MODULES if _source_hash_or_none(module) != sources[module]]
    changed += [module for module, digest in c_sources.items() if _source_hash_or_none(module, ".c") != digest]
    if changed:
        return None, f"{len(changed)} source(s) changed since the build ({', '.join(changed[:3])}); rebuild"
    libraries = {name: native_dir / relative for name, relative in manifest.get("libraries", {}).items()}
    expected = [*COMPILED_MODULES, SHARED_LIBRARY, *c_sources]
    missing = [name for name in expected if not libraries.get(name, Path()).is_file()]
    if missing:
        return None, f"build incomplete, no library for {', '.join(missing[:3])}"
    return libraries, "compiled"


def _coroutine_methods(native_dir: Path) -> dict[str, dict[str, Entry]]:
    """The build's record of its compiled ``async def`` methods (see ``rocketq.native.coroutines``)."""
    recorded: dict[str, dict[str, Entry]] = json.loads((native_dir / MANIFEST_NAME).read_text()).get(
        "coroutine_methods", {}
    )
    return recorded


def install(native_dir: Path = NATIVE_DIR) -> NativeStatus:
    """Put the compiled modules in front of the plain ones if the build matches (see the module doc)."""
    mode = os.environ.get("ROCKETQ_NATIVE", "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise ImportError(f"ROCKETQ_NATIVE={mode!r}: expected one of {', '.join(MODES)}")
    if mode == "off":
        return NativeStatus(False, "ROCKETQ_NATIVE=off")
    already = [module for module in COMPILED_MODULES if module in sys.modules]
    if already:  # imported before rocketq itself: too late to choose
        return NativeStatus(False, f"{already[0]} was imported before rocketq")
    libraries, reason = check_build(native_dir)
    if libraries is None:
        if mode == "required":
            raise ImportError(f"ROCKETQ_NATIVE=required, but there is no matching compiled build: {reason}")
        if (native_dir / MANIFEST_NAME).exists():
            log.warning("rocketq runs interpreted, its compiled build does not match: %s", reason)
        return NativeStatus(False, reason)
    sys.meta_path.insert(0, _CompiledModuleFinder(libraries, _coroutine_methods(native_dir)))
    return NativeStatus(True, reason)
