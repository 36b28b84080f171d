"""Transport errors: every OSError or timeout from asyncio is translated into one of these."""

from __future__ import annotations

from rocketq.common.errors import RocketqError


class RemotingError(RocketqError):
    """Base class of transport errors."""


class RemotingConnectError(RemotingError):
    def __init__(self, address: str, reason: str) -> None:
        self.address = address
        super().__init__(f"cannot connect to {address}: {reason}")


class RemotingTimeoutError(RemotingError):
    def __init__(self, address: str, code: int, timeout_s: float) -> None:
        self.address = address
        self.code = code
        self.timeout_s = timeout_s
        super().__init__(f"request code={code} to {address} timed out after {timeout_s:.3f}s")


class ConnectionClosedError(RemotingError):
    def __init__(self, address: str, reason: str = "connection closed") -> None:
        self.address = address
        super().__init__(f"{address}: {reason}")
