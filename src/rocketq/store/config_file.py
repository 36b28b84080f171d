"""Atomic JSON config files (``config/topics.json``, ``consumerOffset.json``, ``delayOffset.json``,
``subscriptionGroup.json``, ``consumerFilter.json``).

A write goes to ``<name>.tmp``, is fsynced, the previous version is kept as ``<name>.bak``, and the
temp file is renamed over the original, then the directory is fsynced: a crash leaves either the old
or the new file whole, never half of one. Reading falls back to ``.bak`` when the main file is missing
or unreadable. Keys that fastjson writes unquoted (``{0:12}``) are accepted on read.
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

_BARE_INT_KEY = re.compile(r"([{,]\s*)(-?\d+)(\s*:)")


def _quote_bare_int_keys(text: str) -> str:
    """Quote fastjson's unquoted integer map keys, leaving string contents alone."""
    out: list[str] = []
    for index, part in enumerate(re.split(r'("(?:[^"\\]|\\.)*")', text)):
        out.append(part if index % 2 else _BARE_INT_KEY.sub(r'\1"\2"\3', part))
    return "".join(out)


def write_json_atomically(path: Path, document: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(document, indent=2, sort_keys=False).encode()
    temp = path.with_name(path.name + ".tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    if path.exists():
        backup = path.with_name(path.name + ".bak")
        _copy_over(path, backup)
    os.replace(temp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _copy_over(source: Path, target: Path) -> None:
    target.write_bytes(source.read_bytes())


def read_json(path: Path) -> Any | None:
    """The document in ``path`` (or its ``.bak`` when the file is missing or damaged), else None."""
    for candidate in (path, path.with_name(path.name + ".bak")):
        try:
            text = candidate.read_text()
        except FileNotFoundError:
            continue
        try:
            return json.loads(_quote_bare_int_keys(text))
        except json.JSONDecodeError as exc:
            log.warning("%s: unreadable (%s), trying the backup", candidate, exc)
    return None
