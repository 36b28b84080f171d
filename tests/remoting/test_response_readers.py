"""``invoke(..., read=...)``: the response is read in the read that brought it, before the caller's
task resumes and ahead of tasks that an earlier read of the same loop turn made ready (what a push
consumer relies on to hand a pulled batch to its listener ahead of a producer's next send)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from rocketq.protocol import RemotingCommand, ResponseCode, make_request, make_response
from rocketq.remoting import RemotingClient, RemotingServer, RemotingTimeoutError
from rocketq.remoting.connection import Connection, next_opaque

HOLD = 9101  # answered only when RELEASE comes, in the order the held requests came
RELEASE = 9102  # oneway
ECHO = 9103
LATE = 9104  # answered once the test lets it (after its caller has timed out)


class Holder:
    """A server whose HOLD requests wait for a RELEASE, then are all answered in one callback."""

    def __init__(self) -> None:
        self.held: list[tuple[RemotingCommand, Connection]] = []
        self.holding = asyncio.Event()
        self.late_may_answer = asyncio.Event()
        self.late_answered = asyncio.Event()
        self.server = RemotingServer(
            {HOLD: self.hold, RELEASE: self.release, ECHO: self.echo, LATE: self.late}, host="127.0.0.1", port=0
        )

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server.port}"

    async def hold(self, request: RemotingCommand, connection: Connection) -> None:
        self.held.append((request, connection))
        self.holding.set()

    async def release(self, request: RemotingCommand, connection: Connection) -> None:
        for held, on in self.held:  # each on its own connection, written at once, first held first
            on.send(make_response(held, ResponseCode.SUCCESS, ext_fields=held.ext_fields))
        self.held.clear()

    async def echo(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        return make_response(request, ResponseCode.SUCCESS, ext_fields=request.ext_fields)

    async def late(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        await self.late_may_answer.wait()
        self.late_answered.set()
        return make_response(request, ResponseCode.SUCCESS)

    async def held_count(self, count: int) -> None:
        while len(self.held) < count:
            self.holding.clear()
            await self.holding.wait()


@pytest.fixture
async def holder() -> AsyncIterator[Holder]:
    holder = Holder()
    await holder.server.start()
    yield holder
    await holder.server.aclose(grace_s=0.2)


def request(code: int, **fields: str) -> RemotingCommand:
    return make_request(code, opaque=next_opaque(), ext_fields=fields)


async def test_a_reader_runs_before_a_task_an_earlier_read_of_the_same_turn_woke(holder: Holder) -> None:
    first, second, trigger = RemotingClient(), RemotingClient(), RemotingClient()  # one connection each
    order: list[str] = []

    async def plain_caller() -> None:
        await first.invoke(holder.address, request(HOLD, who="plain"), 5)
        order.append("plain caller resumed")

    def read(response: RemotingCommand) -> str:
        order.append("read")
        return response.ext_fields["who"]

    try:
        async with asyncio.timeout(10):
            plain = asyncio.create_task(plain_caller())
            await holder.held_count(1)
            reading = asyncio.create_task(second.invoke(holder.address, request(HOLD, who="reader"), 5, read))
            await holder.held_count(2)
            # both answers are written in one server callback, the plain caller's first: the client's
            # next turn reads the plain caller's connection, then the reader's
            await trigger.oneway(holder.address, make_request(RELEASE, opaque=next_opaque(), oneway=True))
            assert await reading == "reader"
            await plain
    finally:
        for client in (first, second, trigger):
            await client.aclose()
    assert order == ["read", "plain caller resumed"]


async def test_what_a_reader_raises_is_raised_by_invoke_and_the_connection_goes_on(holder: Holder) -> None:
    client = RemotingClient()

    def refuse(response: RemotingCommand) -> None:
        raise LookupError(f"not this one: {response.code}")

    try:
        with pytest.raises(LookupError, match="not this one"):
            await client.invoke(holder.address, request(ECHO), 5, refuse)
        answered = await client.invoke(holder.address, request(ECHO, n="2"), 5, lambda r: r.ext_fields["n"])
        assert answered == "2"
        connection = await client.connection(holder.address)
        assert connection.pending_requests == 0
    finally:
        await client.aclose()


async def test_a_response_after_the_timeout_is_not_read(holder: Holder) -> None:
    client = RemotingClient()
    read: list[RemotingCommand] = []
    try:
        with pytest.raises(RemotingTimeoutError):
            await client.invoke(holder.address, request(LATE), 0.05, read.append)
        holder.late_may_answer.set()
        await asyncio.wait_for(holder.late_answered.wait(), 5)
        # the late answer was written before this one's, on the same connection: read by now
        await client.invoke(holder.address, request(ECHO), 5)
        assert read == []
    finally:
        await client.aclose()
