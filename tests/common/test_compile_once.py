"""A long numba compilation says so at the default log level (WARNING), and says when it is done."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from rocketq.common.compile_once import CompileOnce

pytest.importorskip("numba")


class _Announced(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("compiling the test kernel with numba"):
            self.seen.set()


def test_a_long_compilation_is_announced_and_its_end_too(caplog: pytest.LogCaptureFixture) -> None:
    announced = _Announced()
    logging.getLogger("rocketq.common.compile_once").addHandler(announced)

    def build(numba: Any) -> str:  # stands in for a compilation that outlasts the notice delay
        assert announced.seen.wait(30), "no announcement while compiling"
        return "kernel"

    try:
        with caplog.at_level(logging.WARNING):
            assert CompileOnce("the test kernel", "in Python", build, notice_after_s=0).get() == "kernel"
    finally:
        logging.getLogger("rocketq.common.compile_once").removeHandler(announced)
    messages = [record.getMessage() for record in caplog.records]
    assert "about 5-30 s" in messages[0]
    assert messages[1].startswith("compiled the test kernel in ") and "cache" in messages[1]


def test_a_quick_one_is_not(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert CompileOnce("the quick kernel", "in Python", lambda numba: 1, notice_after_s=60).get() == 1
    assert caplog.records == []
