"""Waiting for a condition in tests: poll it until it holds, fail with AssertionError after a generous
timeout. Tests wait on what they check (a message arrived, a member left), never on a fixed sleep, so
they stay green on a busy machine; the timeout only bounds a test that would otherwise hang."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

DEFAULT_TIMEOUT_S = 15.0


class _Deadline:
    def __init__(self, timeout_s: float, what: str | None) -> None:
        self._at = time.monotonic() + timeout_s
        self._failure = f"{what or 'condition'} not reached within {timeout_s:g} s"

    def check(self) -> None:
        if time.monotonic() > self._at:
            raise AssertionError(self._failure)


async def eventually(
    condition: Callable[[], object],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    interval_s: float = 0.02,
    what: str | None = None,
) -> None:
    """Return once ``condition()`` is true, checking every ``interval_s`` on the running loop."""
    deadline = _Deadline(timeout_s, what)
    while not condition():
        deadline.check()
        await asyncio.sleep(interval_s)


def wait_until(
    condition: Callable[[], object],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    interval_s: float = 0.02,
    what: str | None = None,
) -> None:
    """Return once ``condition()`` is true, checking every ``interval_s`` (blocking)."""
    deadline = _Deadline(timeout_s, what)
    while not condition():
        deadline.check()
        time.sleep(interval_s)
