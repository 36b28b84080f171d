from __future__ import annotations

import asyncio
import threading

import pytest

from rocketq.protocol import (
    FrameDecoder,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    encode_frame,
    make_request,
    make_response,
)
from rocketq.remoting import (
    ConnectionClosedError,
    RemotingClient,
    RemotingServer,
    RemotingTimeoutError,
    RequestHandler,
    awaited_answer,
)
from rocketq.remoting.connection import Connection, next_opaque
from rocketq.remoting.limits import ServerLimits
from rocketq.remoting.server import BlockingHandler

ECHO = 9001
SLOW = 9002
BLOCKING = 9003
BOOM = 9004
QUIET = 9005


async def echo(request: RemotingCommand, connection: Connection) -> RemotingCommand:
    return make_response(request, ResponseCode.SUCCESS, ext_fields=request.ext_fields, body=request.body)


async def slow(request: RemotingCommand, connection: Connection) -> RemotingCommand:
    await asyncio.sleep(float(request.ext_fields["delay"]))
    return make_response(request, ResponseCode.SUCCESS, ext_fields=request.ext_fields)


def blocking(request: RemotingCommand, connection: Connection) -> RemotingCommand:
    return make_response(request, ResponseCode.SUCCESS, remark=threading.current_thread().name)


def started_slow() -> tuple[RequestHandler, tuple[asyncio.Event, asyncio.Event]]:
    """A ``slow`` handler that sets the first event when it starts and the second when it returns."""
    started, finished = asyncio.Event(), asyncio.Event()

    async def handling(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        started.set()
        response = await slow(request, connection)
        finished.set()
        return response

    return handling, (started, finished)


async def boom(request: RemotingCommand, connection: Connection) -> RemotingCommand:
    raise ValueError("handler exploded")


quiet_seen: list[RemotingCommand] = []


async def quiet(request: RemotingCommand, connection: Connection) -> RemotingCommand:
    quiet_seen.append(request)
    return make_response(request, ResponseCode.SUCCESS)


def request(code: int, **fields: str) -> RemotingCommand:
    return make_request(code, opaque=next_opaque(), ext_fields=fields)


@pytest.fixture
async def server() -> RemotingServer:
    handlers = {ECHO: echo, SLOW: slow, BLOCKING: BlockingHandler(blocking), BOOM: boom, QUIET: quiet}
    server = RemotingServer(handlers, host="127.0.0.1", port=0)
    await server.start()
    yield server  # type: ignore[misc]
    await server.aclose(grace_s=0.2)


@pytest.fixture
async def client() -> RemotingClient:
    client = RemotingClient()
    yield client  # type: ignore[misc]
    await client.aclose()


async def test_invoke_and_connection_reuse(server: RemotingServer, client: RemotingClient) -> None:
    address = f"127.0.0.1:{server.port}"
    response = await client.invoke(address, make_request(ECHO, opaque=next_opaque(), body=b"ping"), 3)
    assert (response.code, response.body) == (ResponseCode.SUCCESS, b"ping")
    await client.invoke(address, request(ECHO), 3)
    assert len(server.connections) == 1


async def test_responses_out_of_order_match_by_opaque(server: RemotingServer, client: RemotingClient) -> None:
    address = f"127.0.0.1:{server.port}"
    slow_call = asyncio.create_task(client.invoke(address, request(SLOW, delay="0.3", tag="slow"), 3))
    fast = await client.invoke(address, request(SLOW, delay="0", tag="fast"), 3)
    assert fast.ext_fields["tag"] == "fast" and not slow_call.done()
    assert (await slow_call).ext_fields["tag"] == "slow"


async def test_unknown_code_and_failing_handler(server: RemotingServer, client: RemotingClient) -> None:
    address = f"127.0.0.1:{server.port}"
    unknown = await client.invoke(address, request(4242), 3)
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED and "4242" in (unknown.remark or "")
    failed = await client.invoke(address, request(BOOM), 3)
    assert failed.code == ResponseCode.SYSTEM_ERROR and "handler exploded" in (failed.remark or "")
    assert (await client.invoke(address, request(ECHO), 3)).code == ResponseCode.SUCCESS


async def test_blocking_handler_runs_off_the_loop(server: RemotingServer, client: RemotingClient) -> None:
    response = await client.invoke(f"127.0.0.1:{server.port}", request(BLOCKING), 3)
    assert (response.remark or "").startswith("rocketq-handler")


async def test_oneway_gets_no_reply(server: RemotingServer, client: RemotingClient) -> None:
    quiet_seen.clear()
    address = f"127.0.0.1:{server.port}"
    await client.oneway(address, make_request(QUIET, opaque=next_opaque(), oneway=True))
    await client.invoke(address, request(ECHO), 3)  # ordered after the oneway on the same connection
    assert len(quiet_seen) == 1
    connection = await client.connection(address)
    assert connection.pending_requests == 0


async def test_timeout(server: RemotingServer, client: RemotingClient) -> None:
    with pytest.raises(RemotingTimeoutError):
        await client.invoke(f"127.0.0.1:{server.port}", request(SLOW, delay="2"), 0.1)


async def test_a_request_made_later_with_a_shorter_timeout_fails_first(
    server: RemotingServer, client: RemotingClient
) -> None:
    """One timer per connection, armed for the earliest deadline: a later request whose deadline comes
    first re-arms it, and the earlier request's own deadline still fires after it."""
    address = f"127.0.0.1:{server.port}"
    connection = await client.connection(address)
    longer = connection.request(request(SLOW, delay="4"), 2.0)
    shorter = connection.request(request(SLOW, delay="4"), 0.1)
    with pytest.raises(RemotingTimeoutError) as shorter_error:
        await shorter
    assert shorter_error.value.timeout_s == 0.1
    assert not longer.done()
    with pytest.raises(RemotingTimeoutError) as longer_error:
        await longer
    assert longer_error.value.timeout_s == 2.0
    assert connection.pending_requests == 0
    assert (await connection.invoke(request(ECHO), 3)).code == ResponseCode.SUCCESS


async def test_a_cancelled_invoke_leaves_nothing_pending(server: RemotingServer, client: RemotingClient) -> None:
    connection = await client.connection(f"127.0.0.1:{server.port}")
    call = asyncio.create_task(connection.invoke(request(SLOW, delay="2"), 5))
    async with asyncio.timeout(3):
        while connection.pending_requests == 0:
            await asyncio.sleep(0)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert connection.pending_requests == 0


async def test_a_request_on_a_closed_connection_is_refused(server: RemotingServer, client: RemotingClient) -> None:
    connection = await client.connection(f"127.0.0.1:{server.port}")
    connection.close()
    await connection.closed
    with pytest.raises(ConnectionClosedError):
        connection.request(request(ECHO), 3)
    assert connection.pending_requests == 0


async def raw_connection(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


@pytest.mark.parametrize(
    "garbage",
    [
        b"\xff\xff\xff\xff" + b"x" * 8,  # negative length
        (100 * 1024 * 1024).to_bytes(4, "big") + b"\x00\x00\x00\x02{}",  # frame over the limit
        (12).to_bytes(4, "big") + (8).to_bytes(4, "big") + b"not json",  # header that is not JSON
        (6).to_bytes(4, "big") + b"\x07\x00\x00\x02{}",  # unknown serialization type
    ],
)
async def test_bad_frames_close_only_their_connection(
    server: RemotingServer, client: RemotingClient, garbage: bytes
) -> None:
    address = f"127.0.0.1:{server.port}"
    await client.invoke(address, request(ECHO), 3)
    reader, writer = await raw_connection(server.port)
    writer.write(garbage)
    await writer.drain()
    async with asyncio.timeout(3):
        assert await reader.read() == b""  # the server closed it
    writer.close()
    assert (await client.invoke(address, request(ECHO), 3)).code == ResponseCode.SUCCESS


async def test_requests_before_a_bad_frame_in_the_same_write_are_answered_then_it_closes(
    server: RemotingServer,
) -> None:
    reader, writer = await raw_connection(server.port)
    asked = request(ECHO)
    good = encode_frame(asked)
    writer.write(good + b"\xff\xff\xff\xff" + b"x" * 8)
    await writer.drain()
    async with asyncio.timeout(3):
        answered = await reader.read()  # the answer, then the server closes
    writer.close()
    decoder = FrameDecoder()
    (response,) = decoder.decode(answered)
    assert response.opaque == asked.opaque and response.code == ResponseCode.SUCCESS


async def test_silent_and_half_frame_clients_do_not_block_others(
    server: RemotingServer, client: RemotingClient
) -> None:
    _, silent = await raw_connection(server.port)
    _, half = await raw_connection(server.port)
    half.write((200).to_bytes(4, "big") + b"\x00\x00\x00")
    await half.drain()
    half.close()  # disconnect mid-frame
    assert (await client.invoke(f"127.0.0.1:{server.port}", request(ECHO), 3)).code == ResponseCode.SUCCESS
    silent.close()


async def test_pending_requests_fail_when_the_peer_goes_away(client: RemotingClient) -> None:
    handling, (started, _) = started_slow()
    server = RemotingServer({SLOW: handling}, host="127.0.0.1", port=0)
    await server.start()
    call = asyncio.create_task(client.invoke(f"127.0.0.1:{server.port}", request(SLOW, delay="5"), 10))
    async with asyncio.timeout(10):
        await started.wait()  # the request is pending at the server
    for connection in list(server.connections):
        connection.abort()
    with pytest.raises(ConnectionClosedError):
        await call
    await server.aclose(grace_s=0.1)


async def test_graceful_close_finishes_in_flight(client: RemotingClient) -> None:
    handling, (started, finished) = started_slow()
    server = RemotingServer({SLOW: handling}, host="127.0.0.1", port=0)
    await server.start()
    call = asyncio.create_task(client.invoke(f"127.0.0.1:{server.port}", request(SLOW, delay="0.2"), 10))
    async with asyncio.timeout(10):
        await started.wait()  # in flight when the close begins
    await server.aclose()
    assert finished.is_set()
    assert (await call).code == ResponseCode.SUCCESS


async def test_idle_connections_are_closed() -> None:
    closed: list[str] = []
    server = RemotingServer(
        {ECHO: echo},
        host="127.0.0.1",
        port=0,
        limits=ServerLimits(idle_timeout_s=0.2),
        on_idle=lambda c: closed.append(c.remote_address),
    )
    await server.start()
    reader, writer = await raw_connection(server.port)
    # (the bound only stops a hang: the server's own scan closes it, after 0.2 s idle on a quiet host;
    # test_limits drives the same rule with a fake clock)
    async with asyncio.timeout(15):
        assert await reader.read() == b""
    writer.close()
    assert closed
    await server.aclose()


async def test_server_initiated_request_reaches_client_handler() -> None:
    got = asyncio.get_running_loop().create_future()

    async def on_notify(request: RemotingCommand, connection: Connection) -> None:
        got.set_result(request.ext_fields["consumerGroup"])
        return None

    client = RemotingClient(handlers={RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: on_notify})
    server = RemotingServer({ECHO: echo}, host="127.0.0.1", port=0)
    await server.start()
    await client.invoke(f"127.0.0.1:{server.port}", request(ECHO), 3)
    (connection,) = server.connections
    connection.send(
        make_request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, opaque=next_opaque(), ext_fields={"consumerGroup": "g1"})
    )
    async with asyncio.timeout(3):
        assert await got == "g1"
    await client.aclose()
    await server.aclose()


def test_runs_on_uvloop() -> None:
    uvloop = pytest.importorskip("uvloop")

    async def round_trip() -> bytes:
        server = RemotingServer({ECHO: echo}, host="127.0.0.1", port=0)
        await server.start()
        client = RemotingClient()
        try:
            response = await client.invoke(
                f"127.0.0.1:{server.port}", make_request(ECHO, opaque=next_opaque(), body=b"uv"), 3
            )
            return bytes(response.body)
        finally:
            await client.aclose()
            await server.aclose()

    assert uvloop.run(round_trip()) == b"uv"


async def test_handlers_answer_in_order_and_a_waiting_one_continues_in_a_task() -> None:
    """Handlers start as their request is decoded; one that waits carries on in a Task of its own (so
    what needs a task works after its first wait) while the requests behind it are answered."""
    order: list[str] = []
    last_answered = asyncio.Event()

    async def waits_then_times(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        order.append("waiting start")
        await last_answered.wait()  # only the requests behind it, handled meanwhile, can set it
        assert asyncio.current_task() is not None
        async with asyncio.timeout(1):  # needs a current task
            await asyncio.sleep(0)
        order.append("waiting end")
        return make_response(request, ResponseCode.SUCCESS, remark="waited")

    async def at_once(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        order.append("at once " + request.ext_fields["n"])
        if request.ext_fields["n"] == "2":
            last_answered.set()
        return make_response(request, ResponseCode.SUCCESS, remark=request.ext_fields["n"])

    server = RemotingServer({SLOW: waits_then_times, ECHO: at_once}, host="127.0.0.1", port=0)
    await server.start()
    client = RemotingClient()
    try:
        address = f"127.0.0.1:{server.port}"
        calls = [client.invoke(address, request(SLOW), 3)] + [
            client.invoke(address, request(ECHO, n=str(i)), 3) for i in range(3)
        ]
        responses = await asyncio.gather(*calls)
        assert [r.remark for r in responses] == ["waited", "0", "1", "2"]
        assert order == ["waiting start", "at once 0", "at once 1", "at once 2", "waiting end"]
    finally:
        await client.aclose()
        await server.aclose(grace_s=0.2)


async def test_the_observer_is_told_of_every_answer_sent(client: RemotingClient) -> None:
    observed: list[tuple[int, int, float]] = []
    handlers = {ECHO: echo, SLOW: slow, BLOCKING: BlockingHandler(blocking), BOOM: boom, QUIET: quiet}

    def observer(request: RemotingCommand, response: RemotingCommand, seconds: float) -> None:
        observed.append((request.code, response.code, seconds))

    server = RemotingServer(handlers, host="127.0.0.1", port=0, observer=observer)
    await server.start()
    try:
        address = f"127.0.0.1:{server.port}"
        await client.oneway(address, make_request(QUIET, opaque=next_opaque(), oneway=True))  # not answered
        for code in (ECHO, BLOCKING, BOOM, 4242):
            await client.invoke(address, request(code), 3)
        await client.invoke(address, request(SLOW, delay="0.05"), 3)
    finally:
        await server.aclose(grace_s=0.2)
    assert [(code, answer) for code, answer, _ in observed] == [
        (ECHO, ResponseCode.SUCCESS),
        (BLOCKING, ResponseCode.SUCCESS),
        (BOOM, ResponseCode.SYSTEM_ERROR),
        (4242, ResponseCode.REQUEST_CODE_NOT_SUPPORTED),
        (SLOW, ResponseCode.SUCCESS),
    ]
    assert all(seconds >= 0 for *_, seconds in observed)
    assert observed[-1][2] >= 0.04  # from the request's start to its answer: the handler's sleep included


AT_ONCE = 9006
AT_ONCE_BOOM = 9007


def answers_at_once(request: RemotingCommand, connection: Connection) -> RemotingCommand:
    return make_response(request, ResponseCode.SUCCESS, remark="at once", ext_fields=request.ext_fields)


def raises_at_once(request: RemotingCommand, connection: Connection) -> RemotingCommand:
    raise ValueError("plain handler exploded")


async def test_plain_handlers_answer_at_once_like_async_ones(client: RemotingClient) -> None:
    """A handler that is a plain function answers (and fails) as an async one does, observer included;
    ``awaited_answer`` gives a wrapper the answer of either kind."""
    observed: list[tuple[int, int]] = []
    handlers = {ECHO: echo, AT_ONCE: answers_at_once, AT_ONCE_BOOM: raises_at_once, SLOW: slow}
    server = RemotingServer(
        handlers,
        host="127.0.0.1",
        port=0,
        observer=lambda request, response, _: observed.append((request.code, response.code)),
    )
    await server.start()
    try:
        address = f"127.0.0.1:{server.port}"
        calls = [
            client.invoke(address, request(SLOW, delay="0.05"), 3),
            client.invoke(address, request(AT_ONCE, n="1"), 3),
            client.invoke(address, request(AT_ONCE_BOOM), 3),
        ]
        slow_answer, at_once, failed = await asyncio.gather(*calls)
        assert at_once.code == ResponseCode.SUCCESS and at_once.remark == "at once" and at_once.ext_fields == {"n": "1"}
        assert failed.code == ResponseCode.SYSTEM_ERROR and "plain handler exploded" in (failed.remark or "")
        assert slow_answer.code == ResponseCode.SUCCESS
    finally:
        await server.aclose(grace_s=0.2)
    assert sorted(observed) == sorted(
        [(SLOW, ResponseCode.SUCCESS), (AT_ONCE, ResponseCode.SUCCESS), (AT_ONCE_BOOM, ResponseCode.SYSTEM_ERROR)]
    )
    sent = request(ECHO, n="2")
    assert (await awaited_answer(answers_at_once(sent, None))).remark == "at once"  # type: ignore[arg-type,union-attr]
    assert (await awaited_answer(echo(sent, None))).ext_fields == {"n": "2"}  # type: ignore[arg-type,union-attr]
    assert await awaited_answer(None) is None
