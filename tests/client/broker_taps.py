"""Watching what a real broker receives and answers, for tests: its own handler still handles every request."""

from __future__ import annotations

from collections.abc import Callable

from rocketq.broker.server import Broker
from rocketq.protocol import RemotingCommand
from rocketq.remoting import Connection
from rocketq.remoting.server import BlockingHandler

Seen = Callable[[RemotingCommand, RemotingCommand | None], None]
"""Called with each request and the broker's answer (None for a pull the broker holds)."""


def tap(broker: Broker, code: int, seen: Seen) -> None:
    """Call ``seen`` for every request ``code`` that ``broker`` handles from now on."""
    handlers = broker.handlers
    assert handlers, "broker not started"
    handle = handlers[code]
    assert not isinstance(handle, BlockingHandler)

    async def watched(request: RemotingCommand, connection: Connection) -> RemotingCommand | None:
        response = await handle(request, connection)
        seen(request, response)
        return response

    handlers[code] = watched
