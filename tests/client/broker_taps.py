"""Watching what a real broker receives and answers, for tests: its own handler still handles every request."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from rocketq.broker.server import Broker
from rocketq.protocol import PullMessageRequestHeader, RemotingCommand, RequestCode
from rocketq.remoting import Connection, awaited_answer
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
        response = await awaited_answer(handle(request, connection))
        seen(request, response)
        return response

    handlers[code] = watched


class HeldReplies:
    """The first ``count`` requests of a code, over the brokers it is installed on, are handled as always,
    but their answers are held back until ``release()``: their senders time out although the broker did
    the work (a reply lost or late on the network). ``held`` are the answers held, ``requests`` every
    request seen."""

    def __init__(self, count: int = 1) -> None:
        self.left = count
        self.held: list[RemotingCommand] = []
        self.requests: list[RemotingCommand] = []
        self._released = asyncio.Event()

    def install(self, broker: Broker, code: int) -> HeldReplies:
        handlers = broker.handlers
        assert handlers, "broker not started"
        handle = handlers[code]
        assert not isinstance(handle, BlockingHandler)

        async def holding(request: RemotingCommand, connection: Connection) -> RemotingCommand | None:
            self.requests.append(request)
            hold = self.left > 0
            self.left -= 1
            response = await awaited_answer(handle(request, connection))
            if hold and response is not None:
                self.held.append(response)
                await self._released.wait()
            return response

        handlers[code] = holding
        return self

    def release(self) -> None:
        self._released.set()


def pulled_with(brokers: Iterable[Broker], group: str, topic: str, expression: str) -> set[tuple[str, int]]:
    """The (broker name, queue id) of every queue of ``topic`` that ``group`` pulls with the subscription
    ``expression`` from now on (filled as the brokers see the pulls). A push or pull consumer has one
    pull per queue out at a time, so once a queue is here, its pulls with an older expression are done."""
    seen_with: set[tuple[str, int]] = set()
    for broker in brokers:

        def seen(
            request: RemotingCommand, response: RemotingCommand | None, name: str = broker.config.broker_name
        ) -> None:
            header = PullMessageRequestHeader.from_ext_fields(request.ext_fields)
            if header.consumer_group == group and header.topic == topic and header.subscription == expression:
                seen_with.add((name, header.queue_id))

        tap(broker, RequestCode.PULL_MESSAGE, seen)
    return seen_with
