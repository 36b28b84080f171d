"""SIGKILL a writing process at random moments; every acknowledged message must survive intact.

Durability against a killed process (not a lost machine): the kernel keeps what reached the page
cache, so these tests check that recovery never loses or corrupts an acknowledged record and that the
ConsumeQueues and index agree with the CommitLog afterwards.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocketq.store import MessageStore

from .crash_child import __file__ as CHILD
from .crash_support import child_config
from .test_recovery import assert_consistent

pytestmark = pytest.mark.crash


def run_and_kill(root: Path, mode: str, start_id: int, rng: random.Random) -> list[tuple[int, int, int]]:
    """Start the child, let it write for a random while, SIGKILL it; return the acknowledged puts."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen(
        [sys.executable, CHILD, str(root), mode, str(start_id)], stdout=subprocess.PIPE, env=env, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    time.sleep(rng.uniform(0.02, 0.35))
    child.send_signal(signal.SIGKILL)
    output, _ = child.communicate(timeout=30)
    acked = []
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 3 and all(p.isdigit() for p in parts):  # a torn last line is not an ack
            acked.append((int(parts[0]), int(parts[1]), int(parts[2])))
        else:
            assert not line.startswith("error"), line
    assert child.returncode == -signal.SIGKILL
    return acked


def verify(root: Path, acked: list[tuple[int, int, int]]) -> int:
    with MessageStore(child_config(root)) as store:
        assert store.recovery is not None and not store.recovery.clean_shutdown
        for ident, offset, size in acked:
            record = store.lookup_message(offset)
            assert record is not None, f"acknowledged message {ident} at {offset} lost"
            assert record.total_size == size
            assert record.body == f"payload-{ident}-".encode() * (1 + ident % 17)
        for ident, offset, _ in rng_sample(acked):
            assert offset in [r.physical_offset for r in store.query_message("Crash", f"id{ident}")]
        return assert_consistent(store)


def rng_sample(acked: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    return random.Random(len(acked)).sample(acked, min(10, len(acked)))


@pytest.mark.parametrize(("mode", "kills"), [("sync", 14), ("async", 8)])
def test_sigkill_loses_no_acknowledged_message(tmp_path: Path, mode: str, kills: int) -> None:
    rng = random.Random(f"{mode}-{kills}")
    root = tmp_path / "store"
    acked: list[tuple[int, int, int]] = []
    next_id = 0
    for _ in range(kills):
        new = run_and_kill(root, mode, next_id, rng)
        acked.extend(new)
        next_id = (max(i for i, _, _ in acked) + 10) if acked else next_id + 10
        count = verify(root, acked)
        assert count >= len(acked)
    assert len(acked) > kills  # the children really wrote between kills
