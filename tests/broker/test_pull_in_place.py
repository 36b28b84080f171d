"""A pull answer's records leave the broker as views of the CommitLog's mapped files, not joined first
(``rocketq.broker.handlers.pull.records_to_write``). They arrive byte-equal to what the store holds, and
a client reading slowly still gets every byte while retention deletes those files, or the broker shuts
down, with most of its answer not yet written. The broker runs in the test's loop on uvloop, the loop
``rocketq broker`` serves on (asyncio's transports of Python 3.11 join written pieces themselves)."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import uvloop

from rocketq.broker.server import Broker
from rocketq.protocol import FrameDecoder, RemotingCommand, ResponseCode, encode_frame
from rocketq.remoting import RemotingClient
from rocketq.testing.cluster import wait_dispatched

from .conftest import broker_config
from .raw import pull_request, records, send_request

BODY_SIZE = 60 * 1024
MESSAGES = 200  # about 12 MiB of records in 1 MiB CommitLog files, beyond what the kernel buffers
ANSWER_LIMIT = 64 * 1024 * 1024


def run_on_uvloop(scenario: Callable[[], Coroutine[None, None, None]]) -> None:
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(scenario())


def kernel_send_buffer_max() -> int:
    with open("/proc/sys/net/ipv4/tcp_wmem") as limits:
        return int(limits.read().split()[2])


async def started_broker(root: Path) -> Broker:
    hour = int(time.strftime("%H"))
    config = broker_config(
        root,
        max_pull_bytes=ANSWER_LIMIT,
        file_reserved_time=0.0,
        delete_when=f"{(hour + 12) % 24:02d}",  # no retention round but the test's own
    )
    broker = Broker(config)
    await broker.start()
    return broker


@asynccontextmanager
async def serving(root: Path) -> AsyncIterator[tuple[Broker, RemotingClient]]:
    """A started broker and a client of it; both closed at the end, the client first."""
    broker = await started_broker(root)
    client = RemotingClient()
    try:
        yield broker, client
    finally:
        await client.aclose()
        await broker.aclose()


async def fill(broker: Broker, client: RemotingClient) -> bytes:
    """Store MESSAGES records in queue 0 of "Big", each followed by a small one in queue 1 (so queue 0's
    records are apart in the CommitLog: several views per answer); returns queue 0's stored bytes."""
    for index in range(MESSAGES):
        body = index.to_bytes(4, "big") * (BODY_SIZE // 4)
        for queue_id, payload in ((0, body), (1, b"small")):
            sent = await client.invoke(broker.address, send_request("Big", payload, queue_id=queue_id), 10)
            assert sent.code == ResponseCode.SUCCESS
    await wait_dispatched(broker)
    with broker.store.get_messages("Big", 0, 0, MESSAGES, max_bytes=ANSWER_LIMIT) as stored:
        assert stored.message_count == MESSAGES and len(stored.buffers) > 1
        return stored.tobytes()


async def slow_connection(address: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection whose receive window is small: the broker's answer waits in the broker."""
    host, port = address.rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
    return await asyncio.open_connection(sock=sock, limit=16 * 1024)


async def read_answer(reader: asyncio.StreamReader, first: bytes) -> RemotingCommand:
    decoder = FrameDecoder(max_frame_size=ANSWER_LIMIT + 1024 * 1024)
    commands = decoder.decode(first)
    while not commands:
        received = await reader.read(256 * 1024)
        assert received, "the connection closed before the answer was complete"
        commands = decoder.decode(received)
    (answer,) = commands
    return answer


def test_a_large_answer_is_the_stored_records_byte_for_byte(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with serving(tmp_path / "broker") as (broker, client):
            stored = await fill(broker, client)
            answer = await client.invoke(broker.address, pull_request("Big", 0, 0, max_msg_nums=MESSAGES), 30)
            assert answer.code == ResponseCode.SUCCESS
            assert bytes(answer.body) == stored
            assert [record.queue_offset for record in records(answer)] == list(range(MESSAGES))
            assert answer.ext_fields["nextBeginOffset"] == str(MESSAGES)

    run_on_uvloop(scenario)


def test_retention_deletes_the_files_of_an_answer_a_slow_client_is_still_reading(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Most of a 12 MiB answer is still in the broker when retention deletes the files it comes from:
    the files go (their maps stay until the answer is written), and the client still reads the
    records as they were stored."""
    caplog.set_level(logging.INFO, logger="rocketq.store.mapped_file")

    async def scenario() -> None:
        async with serving(tmp_path / "broker") as (broker, client):
            stored = await fill(broker, client)
            assert len(stored) > 2 * kernel_send_buffer_max()  # so most of the answer waits in the broker
            reader, writer = await slow_connection(broker.address)
            writer.write(encode_frame(pull_request("Big", 0, 0, max_msg_nums=MESSAGES)))
            first = await reader.readexactly(64 * 1024)  # the answer is being written

            files_before = sorted(broker.store.config.commit_log_dir.iterdir())
            deleted = broker.store.retention.run(now=time.time() + 3600, force=True)
            assert deleted >= 5
            files_after = sorted(broker.store.config.commit_log_dir.iterdir())
            assert len(files_after) == len(files_before) - deleted
            assert files_before[0] not in files_after  # the answer's first records were in it
            assert f"{files_before[0]}: closed while views of it are still being written" in caplog.text

            answer = await read_answer(reader, first)
            assert answer.code == ResponseCode.SUCCESS
            assert bytes(answer.body) == stored
            writer.close()

            again = await client.invoke(broker.address, pull_request("Big", 0, 0, max_msg_nums=MESSAGES), 30)
            assert again.code == ResponseCode.PULL_OFFSET_MOVED  # the deleted records are gone for new pulls

    run_on_uvloop(scenario)


def test_a_broker_shutting_down_with_an_answer_unread_crashes_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The broker closes its store (its files' maps stay until the answer is written) while a slow
    client has most of a large answer still to read: the close completes, and whatever the client
    still receives is the stored bytes (a prefix of the answer's frame)."""
    caplog.set_level(logging.INFO, logger="rocketq.store.mapped_file")

    async def scenario() -> None:
        broker = await started_broker(tmp_path / "broker")
        client = RemotingClient()
        try:
            stored = await fill(broker, client)
            pull = pull_request("Big", 0, 0, max_msg_nums=MESSAGES)
            reader, writer = await slow_connection(broker.address)
            writer.write(encode_frame(pull))
            received = bytearray(await reader.readexactly(64 * 1024))
        finally:
            await client.aclose()
        await broker.aclose()
        assert "closed while views of it are still being written" in caplog.text
        while chunk := await reader.read(256 * 1024):
            received += chunk
        writer.close()
        frame_length = int.from_bytes(received[:4], "big")
        assert frame_length > len(stored)
        body_at = 4 + frame_length - len(stored)
        assert received[body_at:] == stored[: len(received) - body_at]

    run_on_uvloop(scenario)


@pytest.mark.parametrize("queue_id", [0, 1])
def test_answers_of_many_small_views_are_the_stored_records_too(tmp_path: Path, queue_id: int) -> None:
    """Queue 1's records lie one per view between queue 0's: its answer is joined, queue 0's is not;
    both are what the store holds."""

    async def scenario() -> None:
        async with serving(tmp_path / "broker") as (broker, client):
            await fill(broker, client)
            with broker.store.get_messages("Big", queue_id, 0, MESSAGES, max_bytes=ANSWER_LIMIT) as stored:
                expected = stored.tobytes()
            answer = await client.invoke(broker.address, pull_request("Big", queue_id, 0, max_msg_nums=MESSAGES), 30)
            assert bytes(answer.body) == expected

    run_on_uvloop(scenario)
