"""What one client may make a server hold: answers it does not read, frames it does not finish, idle
connections (``rocketq.remoting.limits``). Each test plays the misbehaving client on a raw socket."""

from __future__ import annotations

import asyncio
import json
import struct
import threading

import pytest

from rocketq.protocol import RemotingCommand, ResponseCode, encode_frame, make_request, make_response
from rocketq.remoting import RemotingClient, RemotingServer
from rocketq.remoting.connection import Connection, next_opaque
from rocketq.remoting.limits import RequestBytesBudget, ServerLimits
from rocketq.remoting.server import BlockingHandler
from rocketq.testing import eventually

BIG = 9101
ECHO = 9102
ANSWER_SIZE = 256 * 1024
served: list[int] = []


async def big(request: RemotingCommand, connection: Connection) -> RemotingCommand:
    served.append(request.opaque)
    return make_response(request, ResponseCode.SUCCESS, body=bytes(ANSWER_SIZE))


async def echo(request: RemotingCommand, connection: Connection) -> RemotingCommand:
    return make_response(request, ResponseCode.SUCCESS, body=request.body)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def frame(code: int, body: bytes = b"") -> bytes:
    return encode_frame(make_request(code, opaque=next_opaque(), body=body))


async def closed_by_server(reader: asyncio.StreamReader) -> bool:
    """True once the server closed the connection (a reset when it closed with our bytes unread)."""
    async with asyncio.timeout(3):
        try:
            return await reader.read() == b""
        except ConnectionResetError:
            return True


async def read_frames(reader: asyncio.StreamReader, count: int) -> list[int]:
    """The opaques of the next ``count`` frames."""
    opaques = []
    for _ in range(count):
        (length,) = struct.unpack(">i", await reader.readexactly(4))
        payload = await reader.readexactly(length)
        header_length = struct.unpack(">i", payload[:4])[0] & 0xFFFFFF
        opaques.append(int(json.loads(payload[4 : 4 + header_length])["opaque"]))
    return opaques


async def test_a_client_that_never_reads_is_not_served_past_the_high_water_mark() -> None:
    served.clear()
    limits = ServerLimits(write_buffer_high_water=512 * 1024, write_buffer_low_water=128 * 1024)
    server = RemotingServer({BIG: big, ECHO: echo}, host="127.0.0.1", port=0, limits=limits)
    await server.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    requests = [make_request(BIG, opaque=next_opaque()) for _ in range(400)]  # 100 MiB of answers asked for
    writer.write(b"".join(encode_frame(r) for r in requests))
    await eventually(lambda: any(c.serving_paused for c in server.connections))
    (hostile,) = server.connections
    # whatever it would still do, it has time to do; a slow machine does less meanwhile, so it can only
    # make this check less sensitive, never fail it
    await asyncio.sleep(0.3)
    assert hostile.serving_paused
    assert hostile.unsent_bytes <= limits.write_buffer_high_water + ANSWER_SIZE + 64 * 1024
    assert len(served) < 120  # the kernel's socket buffers hold some answers; the rest were never made

    async with asyncio.timeout(3):  # everyone else is served meanwhile
        client = RemotingClient()
        response = await client.invoke(f"127.0.0.1:{server.port}", make_request(ECHO, opaque=next_opaque()), 3)
        assert response.code == ResponseCode.SUCCESS
        await client.aclose()

    # once it reads, it gets every answer, in order: nothing was dropped
    assert await read_frames(reader, len(requests)) == [r.opaque for r in requests]
    assert len(served) == len(requests)
    writer.close()
    await server.aclose(grace_s=0.2)


async def test_a_frame_never_finished_closes_its_connection_after_the_frame_timeout() -> None:
    clock = FakeClock()
    limits = ServerLimits(frame_timeout_s=30, idle_timeout_s=120)
    server = RemotingServer({ECHO: echo}, host="127.0.0.1", port=0, limits=limits, clock=clock)
    await server.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    whole = frame(ECHO, bytes(10_000))
    writer.write(whole[:5_000])
    await eventually(lambda: any(c.partial_frame_since is not None for c in server.connections))
    for second in range(29):  # one byte a second keeps it active, not complete
        clock.now += 1
        writer.write(whole[5_000 + second : 5_001 + second])
        await writer.drain()
        assert server.close_stalled_connections() == 0
    clock.now += 2
    assert server.close_stalled_connections() == 1
    assert await closed_by_server(reader)
    writer.close()
    await server.aclose(grace_s=0.2)


async def test_idle_connections_are_closed_by_the_clock() -> None:
    clock = FakeClock()
    limits = ServerLimits(idle_timeout_s=120)
    server = RemotingServer({ECHO: echo}, host="127.0.0.1", port=0, limits=limits, clock=clock)
    await server.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(frame(ECHO))
    assert len(await read_frames(reader, 1)) == 1
    clock.now += 119
    assert server.close_stalled_connections() == 0
    clock.now += 2
    assert server.close_stalled_connections() == 1
    assert await closed_by_server(reader)
    writer.close()
    await server.aclose(grace_s=0.2)


async def test_partial_frames_share_one_budget_and_wait_for_room() -> None:
    budget = RequestBytesBudget(limit=100_000)
    server = RemotingServer({ECHO: echo}, host="127.0.0.1", port=0, budget=budget)
    await server.start()
    first_reader, first = await asyncio.open_connection("127.0.0.1", server.port)
    second_reader, second = await asyncio.open_connection("127.0.0.1", server.port)
    first_frame, second_frame = frame(ECHO, bytes(150_000)), frame(ECHO, bytes(80_000))
    first.write(first_frame[:90_000])
    await eventually(lambda: budget.used >= 90_000)
    second.write(second_frame[:40_000])
    await eventually(lambda: budget.waiting == 1)  # 130,000 > 100,000: the second one waits
    second.write(second_frame[40_000:])  # it is not read while it waits
    await asyncio.sleep(0.2)  # time to (wrongly) read it: a slow machine reads less, never a false failure
    assert budget.waiting == 1 and budget.used < 100_000 + 64 * 1024

    first.write(first_frame[90_000:])  # the first frame completes: room for the second
    assert len(await read_frames(first_reader, 1)) == 1
    assert len(await read_frames(second_reader, 1)) == 1
    await eventually(lambda: budget.used == 0 and budget.waiting == 0)
    for writer in (first, second):
        writer.close()
    await server.aclose(grace_s=0.2)


def test_budget_bookkeeping() -> None:
    budget = RequestBytesBudget(limit=100)
    woken: list[str] = []
    assert budget.hold("a", 90, lambda: woken.append("a"))
    assert not budget.hold("b", 20, lambda: woken.append("b"))  # 110 > 100
    assert budget.hold("a", 150, lambda: woken.append("a")) is False  # a grew too: both wait
    assert budget.waiting == 2
    budget.hold("a", 0, lambda: None)  # a's frame completed: 20 used, every waiter woken
    assert woken == ["b"] and budget.used == 20 and budget.waiting == 0
    assert budget.hold("c", 500, lambda: None) is False  # c alone would pass the limit with b holding
    budget.release("b")
    assert budget.used == 500 and budget.waiting == 0  # c, alone, is bounded by the frame size only
    budget.release("c")
    assert budget.used == 0


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="low water"):
        ServerLimits(write_buffer_high_water=10, write_buffer_low_water=20)
    with pytest.raises(ValueError, match="positive"):
        ServerLimits(frame_timeout_s=0)


async def test_requests_on_worker_threads_are_started_a_few_at_a_time_per_connection() -> None:
    gate = threading.Event()
    running = [0, 0]  # now, most at once
    lock = threading.Lock()

    def slow_query(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        gate.wait(10)
        with lock:
            running[0] -= 1
        return make_response(request, ResponseCode.SUCCESS)

    limits = ServerLimits(max_worker_requests=3)
    server = RemotingServer(
        {ECHO: BlockingHandler(slow_query)}, host="127.0.0.1", port=0, limits=limits, worker_threads=8
    )
    await server.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    requests = [make_request(ECHO, opaque=next_opaque()) for _ in range(20)]
    writer.write(b"".join(encode_frame(r) for r in requests))
    await eventually(lambda: running[0] == 3 and any(c.held_requests for c in server.connections))
    # the pool has 8 threads: nothing else starts while the three run (a slow machine starts fewer
    # meanwhile, so it can only make this check less sensitive)
    await asyncio.sleep(0.2)
    assert running == [3, 3]
    gate.set()
    assert sorted(await read_frames(reader, len(requests))) == sorted(r.opaque for r in requests)
    assert running[1] == 3
    writer.close()
    await server.aclose(grace_s=0.2)
