"""Stopping background tasks: cancel them all, then wait until each has finished unwinding."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any] | None], *, ignore_errors: bool = False) -> None:
    """Cancel every task, then await each; a task's own exception is re-raised unless ``ignore_errors``."""
    pending = [task for task in tasks if task is not None]
    for task in pending:
        task.cancel()
    quiet = (asyncio.CancelledError, Exception) if ignore_errors else (asyncio.CancelledError,)
    for task in pending:
        with contextlib.suppress(*quiet):
            await task
