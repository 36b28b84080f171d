"""A connection gathers its writes: the answers to the requests of one read leave in one transport call,
and a client's requests made while others are in flight leave together at the loop's next turn. The
frames are the same and in the same order as when written one by one.

The connections here run over a transport that records each write call (a stand-in for the socket:
what matters is how many calls the connection makes and what they carry)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rocketq.protocol import FrameDecoder, RemotingCommand, ResponseCode, encode_frame, make_request, make_response
from rocketq.remoting.connection import CORK_LIMIT, Connection, next_opaque
from rocketq.remoting.limits import ServerLimits

ECHO = 9001


class RecordingTransport(asyncio.Transport):
    """Keeps every write call's bytes; never pushes back."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[bytes] = []
        self._closing = False

    def write(self, data: Any) -> None:
        self.calls.append(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        self.calls.append(b"".join(bytes(data) for data in list_of_data))

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name == "peername" else default

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


def frames(data: bytes) -> list[RemotingCommand]:
    return FrameDecoder().decode(data)


def receive(connection: Connection, data: bytes) -> None:
    """``data`` read by the transport into the connection's buffers, as much at a time as they take."""
    while data:
        room = connection.get_buffer(-1)
        size = min(len(room), len(data))
        room[:size] = data[:size]
        data = data[size:]
        connection.buffer_updated(size)


def echoing_server(body_size: int = 0) -> tuple[Connection, RecordingTransport]:
    """A server-side connection answering every request at once (as most broker handlers do)."""

    def on_request(request: RemotingCommand, connection: Connection) -> None:
        connection.send(make_response(request, ResponseCode.SUCCESS, body=b"a" * body_size))

    connection = Connection(on_request, max_frame_size=1 << 24, limits=ServerLimits())
    transport = RecordingTransport()
    connection.connection_made(transport)
    return connection, transport


async def test_answers_to_one_read_leave_in_one_write() -> None:
    connection, transport = echoing_server()
    requests = [make_request(ECHO, opaque=opaque) for opaque in range(1, 6)]
    receive(connection, b"".join(encode_frame(request) for request in requests))
    assert len(transport.calls) == 1
    answers = frames(transport.calls[0])
    assert [answer.opaque for answer in answers] == [1, 2, 3, 4, 5]
    assert all(answer.is_response for answer in answers)


async def test_large_answers_are_written_as_they_pass_the_cork_limit() -> None:
    connection, transport = echoing_server(body_size=CORK_LIMIT // 2)
    requests = [make_request(ECHO, opaque=opaque) for opaque in range(1, 7)]
    receive(connection, b"".join(encode_frame(request) for request in requests))
    assert len(transport.calls) == 3  # every second answer passes the limit
    answers = [answer for call in transport.calls for answer in frames(call)]
    assert [answer.opaque for answer in answers] == [1, 2, 3, 4, 5, 6]


async def test_a_write_outside_a_read_is_written_at_once() -> None:
    connection, transport = echoing_server()
    connection.send(make_request(ECHO, opaque=7, oneway=True))
    assert len(transport.calls) == 1


async def test_a_burst_of_requests_made_while_others_are_in_flight_leaves_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop = asyncio.get_running_loop()
    monkeypatch.setattr(loop, "time", lambda: 1000.0)  # (the loop's clock stands still: one burst)
    connection = Connection(lambda request, connection: None, max_frame_size=1 << 24)
    transport = RecordingTransport()
    connection.connection_made(transport)
    requests = [make_request(ECHO, opaque=next_opaque()) for _ in range(5)]
    calls = [asyncio.ensure_future(connection.invoke(request, timeout_s=5)) for request in requests]
    await asyncio.sleep(0)  # the five invokes start
    await asyncio.sleep(0)  # and the gathered ones are written at the next turn
    # the first goes out alone at once (nothing in flight: no reason to wait), so does the second (a
    # lone request in flight beside another: no reason to wait yet), the burst after it together
    assert [[frame.opaque for frame in frames(call)] for call in transport.calls] == [
        [requests[0].opaque],
        [requests[1].opaque],
        [request.opaque for request in requests[2:]],
    ]
    answers = b"".join(encode_frame(make_response(request, ResponseCode.SUCCESS)) for request in requests)
    receive(connection, answers)
    responses = await asyncio.gather(*calls)
    assert [response.opaque for response in responses] == [request.opaque for request in requests]


async def test_a_lone_request_beside_a_held_one_is_written_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client whose producer and consumer share a connection sends each message while its pull is held
    by the broker: the send is written in the call that makes it, not a loop turn later."""
    loop = asyncio.get_running_loop()
    now = [1000.0]
    monkeypatch.setattr(loop, "time", lambda: now[0])
    connection = Connection(lambda request, connection: None, max_frame_size=1 << 24)
    transport = RecordingTransport()
    connection.connection_made(transport)
    held = make_request(ECHO, opaque=next_opaque())
    connection.request(held, 30.0)
    sends = [make_request(ECHO, opaque=next_opaque()) for _ in range(3)]
    for send in sends:
        now[0] += 0.001  # (one message a millisecond)
        connection.request(send, 5.0)
        assert frames(transport.calls[-1])[-1].opaque == send.opaque  # written before any loop turn
    assert [[frame.opaque for frame in frames(call)] for call in transport.calls] == [
        [held.opaque],
        *([send.opaque] for send in sends),
    ]
