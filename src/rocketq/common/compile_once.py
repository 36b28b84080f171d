"""Compiling numba kernels once per process.

The first caller compiles them (or numba loads them from its cache); every later caller gets the same
result. Without numba, or when compiling fails (logged), the result is None and the caller keeps to
its Python path. The kernels' helpers are module globals of their own module (numba freezes globals
into compiled code), so ``build`` sets those itself.

A compilation still running after ``notice_after_s`` (the first start after an install or an upgrade:
numba's cache is empty) says so in a WARNING, so a slow first start is not mistaken for a hang, and says
when it is done.

For whoever edits the kernels: numba's cache of a kernel is keyed on its own source file only. A
kernel that calls helpers of another module (``record_arrow``'s kernel calls ``record_columns``'
``check_record``, ``record_spans`` and ``read_properties``) is not compiled again when only the
helpers' file changed: after such an edit, touch the calling module too (or delete its ``*.nbi`` and
``*.nbc`` files in ``__pycache__``). An installed release is not affected (installing rewrites every
file).
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class CompileOnce(Generic[T]):
    """``get()``: ``build(numba)``'s result, made on the first call (thread safe), or None."""

    def __init__(
        self,
        what: str,
        fallback: str,
        build: Callable[[Any], T],
        *,
        ready: Callable[[], bool] = lambda: True,
        notice_after_s: float = 2.0,
    ) -> None:
        self._what = what  # "the dispatcher's scan": what the log lines name
        self._fallback = fallback  # what the caller does instead, for the failure's log line
        self._build = build
        self._ready = ready  # checked first: False means None, without importing numba
        self._notice_after_s = notice_after_s  # a build (not a cache load) running this long is announced
        self._announced = False
        self._lock = threading.Lock()
        self._done = False
        self._result: T | None = None

    def get_or(self, plain: T) -> T:
        """``get()``'s result, or ``plain`` (the same kernels uncompiled) when there is none."""
        compiled = self.get()
        return plain if compiled is None else compiled

    def get(self) -> T | None:
        with self._lock:
            if self._done:
                return self._result
            self._done = True
            if not self._ready():
                return None
            try:
                numba = importlib.import_module("numba")
            except ImportError:
                return None
            began = time.monotonic()
            notice = threading.Timer(self._notice_after_s, self._announce)
            notice.daemon = True
            notice.start()
            try:
                result = self._build(numba)
            except Exception:  # a numba that cannot compile here must not keep the store (or a reader) from starting
                log.exception("compiling %s failed; %s", self._what, self._fallback)
                return None
            finally:
                notice.cancel()
            self._result = result
            seconds = time.monotonic() - began
            notice.join()  # (an announcement under way ends before the outcome is logged)
            if self._announced:
                log.warning("compiled %s in %.1f s; later starts load it from numba's cache", self._what, seconds)
            elif seconds > 1:
                log.info("compiled %s in %.1f s (cached for later starts)", self._what, seconds)
            return result

    def _announce(self) -> None:
        self._announced = True
        log.warning(
            "compiling %s with numba: the first start after an install or an upgrade takes about 5-30 s"
            " (later starts load it from the cache)",
            self._what,
        )
