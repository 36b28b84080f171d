"""A connection's reads: every frame a read completes is taken in the stream's order (a response by the
future and reader of its request, a request by the connection's sink) wherever the reads split the
frames, and the answers one read makes leave in one write, in the order they were made.

A broker answers a send that wakes a pull held on the same connection (a client whose producer and
consumer share it) with two frames in one turn: the pull's answer, then the send's. Both must reach
the client in one write and be taken from one read in that order.

The connections run over ``RecordingTransport`` (every write call kept), fed as a socket would: each
read into the connection's own buffer (``get_buffer``), at most as much as it offers."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.protocol import FrameDecoder, RemotingCommand, ResponseCode, encode_frame, make_request, make_response
from rocketq.protocol.frame import LARGE_FRAME, encode_frame_parts
from rocketq.remoting.connection import Connection, next_opaque
from rocketq.remoting.limits import ServerLimits

from .test_write_gathering import ECHO, RecordingTransport, frames

PULL = 11  # (request codes of this test's server: a pull it holds, a send that answers the held pull)
SEND = 310


def receive_in_parts(connection: Connection, data: bytes, cuts: list[int]) -> int:
    """``data`` read by the connection with a read ending at each of ``cuts`` (and wherever its buffer
    is full); returns how many reads it took."""
    reads = 0
    for start, end in itertools.pairwise([0, *sorted(cuts), len(data)]):
        at = start
        while at < end:
            room = connection.get_buffer(-1)
            size = min(len(room), end - at)
            room[:size] = data[at : at + size]
            at += size
            connection.buffer_updated(size)
            reads += 1
    return reads


def client_connection(
    on_request: Callable[[RemotingCommand, Connection], None],
) -> tuple[Connection, RecordingTransport]:
    connection = Connection(on_request, max_frame_size=1 << 24)
    transport = RecordingTransport()
    connection.connection_made(transport)
    return connection, transport


async def test_two_answers_written_in_one_turn_reach_the_client_in_one_read_in_order() -> None:
    held: list[RemotingCommand] = []

    def on_request(request: RemotingCommand, connection: Connection) -> None:
        if request.code == PULL:  # held until a send comes
            held.append(request)
            return
        # the send wakes the held pull: its answer first (a pre-encoded frame, as a held pull's), then the send's
        connection.send_frame(encode_frame_parts(make_response(held.pop(), ResponseCode.SUCCESS, body=b"message")))
        connection.send(make_response(request, ResponseCode.SUCCESS, ext_fields={"msgId": "m1"}))

    server = Connection(on_request, max_frame_size=1 << 24, limits=ServerLimits())
    server_transport = RecordingTransport()
    server.connection_made(server_transport)
    client, client_transport = client_connection(lambda request, connection: None)

    taken: list[str] = []

    def read_pull(response: RemotingCommand) -> bytes:
        taken.append("pull")
        return bytes(response.body)

    def read_send(response: RemotingCommand) -> str:
        taken.append("send")
        return response.ext_fields["msgId"]

    pull, send = make_request(PULL, opaque=next_opaque()), make_request(SEND, opaque=next_opaque())
    pulled = client.request(pull, 5.0, read_pull)
    sent = client.request(send, 5.0, read_send)
    await asyncio.sleep(0)  # the send, gathered behind the pull in flight, is written
    for call in client_transport.calls:
        receive_in_parts(server, call, [])
    assert len(server_transport.calls) == 1  # the two answers, one write
    assert [frame.opaque for frame in frames(server_transport.calls[0])] == [pull.opaque, send.opaque]

    assert receive_in_parts(client, server_transport.calls[0], []) == 1  # one read
    assert taken == ["pull", "send"]  # both taken in that read, in the order written
    assert pulled.result() == b"message"
    assert sent.result() == "m1"
    assert client.pending_requests == 0


@st.composite
def streams(draw: st.DrawFn) -> list[tuple[str, int]]:
    """Frames a client may read: responses (of any size, large ones' bodies read into buffers of their
    own) and the server's requests, as (kind, body size)."""
    sizes = st.sampled_from([0, 1, 60, 3000, LARGE_FRAME - 30, LARGE_FRAME + 5, 70_000])
    return draw(
        st.lists(st.tuples(st.sampled_from(["response", "response", "request"]), sizes), min_size=1, max_size=8)
    )


def body_of(index: int, size: int) -> bytes:
    return bytes((index + at) % 251 for at in range(size))


@given(streams(), st.data())
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None, max_examples=60)
def test_a_client_takes_every_frame_in_order_wherever_the_reads_split_them(
    stream: list[tuple[str, int]], data: st.DataObject
) -> None:
    async def scenario() -> None:
        taken: list[tuple[str, int]] = []
        client, _ = client_connection(lambda request, connection: taken.append(("request", request.opaque)))

        def reader(response: RemotingCommand) -> bytes:
            taken.append(("response", response.opaque))
            return bytes(response.body)

        futures: list[asyncio.Future[Any]] = []
        wire: list[bytes] = []
        for index, (kind, size) in enumerate(stream):
            request = make_request(ECHO, opaque=index + 1)  # (fixed: the stream's length is the example's)
            if kind == "response":
                futures.append(client.request(request, 5.0, reader))
                wire.append(encode_frame(make_response(request, ResponseCode.SUCCESS, body=body_of(index, size))))
            else:
                wire.append(encode_frame(make_request(ECHO, opaque=request.opaque, body=body_of(index, size))))
        joined = b"".join(wire)
        cuts = data.draw(st.lists(st.integers(0, len(joined)), max_size=12))
        receive_in_parts(client, joined, cuts)
        expected = [("response" if frame.is_response else "request", frame.opaque) for frame in frames(joined)]
        assert taken == expected
        bodies = [body_of(index, size) for index, (kind, size) in enumerate(stream) if kind == "response"]
        assert [future.result() for future in futures] == bodies
        assert client.pending_requests == 0

    asyncio.run(scenario())


@given(st.lists(st.sampled_from([0, 1, 60, 3000, LARGE_FRAME + 5, 70_000]), min_size=1, max_size=8), st.data())
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None, max_examples=60)
def test_a_server_answers_every_request_in_order_wherever_the_reads_split_them(
    sizes: list[int], data: st.DataObject
) -> None:
    async def scenario() -> None:
        served: list[int] = []

        def on_request(request: RemotingCommand, connection: Connection) -> None:
            served.append(request.opaque)
            connection.send(make_response(request, ResponseCode.SUCCESS, body=bytes(request.body[:10])))

        server = Connection(on_request, max_frame_size=1 << 24, limits=ServerLimits())
        transport = RecordingTransport()
        server.connection_made(transport)
        requests = [make_request(ECHO, opaque=i + 1, body=body_of(i, size)) for i, size in enumerate(sizes)]
        joined = b"".join(encode_frame(request) for request in requests)
        cuts = data.draw(st.lists(st.integers(0, len(joined)), max_size=12))
        reads = receive_in_parts(server, joined, cuts)
        opaques = [request.opaque for request in requests]
        assert served == opaques
        answers = FrameDecoder().decode(b"".join(transport.calls))
        assert [answer.opaque for answer in answers] == opaques
        assert [bytes(answer.body) for answer in answers] == [bytes(request.body[:10]) for request in requests]
        assert len(transport.calls) <= reads  # (at most one write per read)
        assert server.partial_frame_since is None  # every frame complete: nothing held

    asyncio.run(scenario())
