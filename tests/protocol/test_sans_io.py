"""The codec must stay free of I/O: no asyncio, socket or selectors anywhere in it."""

from __future__ import annotations

import ast
from pathlib import Path

import rocketq.protocol

FORBIDDEN = {"asyncio", "socket", "selectors", "ssl"}


def test_protocol_package_imports_no_io_modules() -> None:
    package = Path(rocketq.protocol.__file__).parent
    offenders = []
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            else:
                continue
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
    assert offenders == []


def test_public_names_are_exported() -> None:
    for name in rocketq.protocol.__all__:
        assert hasattr(rocketq.protocol, name), name
