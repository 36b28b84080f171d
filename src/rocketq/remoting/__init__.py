"""asyncio transport for the remoting protocol: the only package that opens sockets."""

from rocketq.remoting.client import RemotingClient
from rocketq.remoting.connection import Connection, RequestHandler
from rocketq.remoting.errors import (
    ConnectionClosedError,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
)
from rocketq.remoting.server import HandlerTable, RemotingServer, RequestGuard, ServerHandler, awaited_answer

__all__ = [
    "Connection",
    "ConnectionClosedError",
    "HandlerTable",
    "RemotingClient",
    "RemotingConnectError",
    "RemotingError",
    "RemotingServer",
    "RemotingTimeoutError",
    "RequestGuard",
    "RequestHandler",
    "ServerHandler",
    "awaited_answer",
]
