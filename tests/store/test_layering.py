"""The layering rules of docs/architecture.md#layers-and-import-rules, checked on the source: store and
protocol stay free of I/O frameworks, and the store imports nothing above ``rocketq.common``."""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "rocketq"
FORBIDDEN_EVERYWHERE = {"asyncio", "socket", "selectors", "uvloop"}


def imported_modules(package: str) -> list[tuple[Path, str]]:
    found = []
    for path in sorted((SRC / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.extend((path, alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.append((path, node.module))
    return found


@pytest.mark.parametrize("package", ["store", "protocol", "common", "filter"])
def test_no_io_frameworks(package: str) -> None:
    if not (SRC / package).exists():
        pytest.skip(f"rocketq.{package} does not exist yet")
    bad = [(p.name, m) for p, m in imported_modules(package) if m.split(".")[0] in FORBIDDEN_EVERYWHERE]
    assert bad == []


def test_store_imports_nothing_above_common() -> None:
    bad = [
        (p.name, m)
        for p, m in imported_modules("store")
        if m.startswith("rocketq.") and not m.startswith(("rocketq.store", "rocketq.common"))
    ]
    assert bad == []


def test_common_imports_only_itself() -> None:
    bad = [
        (p.name, m)
        for p, m in imported_modules("common")
        if m.startswith("rocketq.") and not m.startswith("rocketq.common")
    ]
    assert bad == []


def test_filter_imports_only_common() -> None:
    """The filter language is shared by the broker and the clients: it depends on neither."""
    bad = [
        (p.name, m)
        for p, m in imported_modules("filter")
        if m.startswith("rocketq.") and not m.startswith(("rocketq.filter", "rocketq.common"))
    ]
    assert bad == []
