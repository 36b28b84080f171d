"""Waiting for a condition in tests: poll it until it holds, fail with AssertionError after a generous
timeout. Tests wait on what they check (a message arrived, a member left), never on a fixed sleep, so
they stay green on a busy machine; the timeout only bounds a test that would otherwise hang."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

DEFAULT_TIMEOUT_S = 15.0


def _failure(timeout_s: float, what: str | None) -> AssertionError:
    return AssertionError(f"{what or 'condition'} not reached within {timeout_s:g} s")


async def eventually(
    condition: Callable[[], object],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    interval_s: float = 0.02,
    what: str | None = None,
) -> None:
    """Return once ``condition()`` is true, checking every ``interval_s`` on the running loop."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise _failure(timeout_s, what)
        await asyncio.sleep(interval_s)


def wait_until(
    condition: Callable[[], object],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    interval_s: float = 0.02,
    what: str | None = None,
) -> None:
    """Return once ``condition()`` is true, checking every ``interval_s`` (blocking)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise _failure(timeout_s, what)
        time.sleep(interval_s)
