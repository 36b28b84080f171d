"""Small real disks for tests of a full disk: a tmpfs mounted for the test (needs root, as in CI here),
resized or filled by the test. A test that cannot mount one is skipped with the reason."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def mounted_tmpfs(mount_point: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``mount -o size=...``, e.g. ``"64m"``) at ``mount_point``, unmounted after."""
    mount_point.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def resize_tmpfs(mount_point: Path, size: str) -> None:
    """Grow (or shrink) a mounted tmpfs: space returns the way an operator's bigger volume brings it."""
    subprocess.run(["mount", "-o", f"remount,size={size}", str(mount_point)], check=True, capture_output=True)


def fill(disk: Path, leave: int = 0, name: str = "ballast") -> Path:
    """Write a ballast file on ``disk`` until at most ``leave`` bytes are free; returns its path."""
    ballast = disk / name
    with ballast.open("ab", buffering=0) as handle:
        chunk = bytes(256 * 1024)
        while True:
            usage = _free(disk)
            if usage <= leave:
                break
            size = min(len(chunk), usage - leave)
            try:
                handle.write(chunk[:size])
            except OSError:
                if size <= 4096:
                    break
                chunk = chunk[: len(chunk) // 2]
    return ballast


def _free(disk: Path) -> int:

    usage = os.statvfs(disk)
    return usage.f_bavail * usage.f_frsize
