"""The machine's floor for the latency benchmark: paced round trips to a trivial echo server.

``python -m rocketq.bench.echo`` serves TCP echo on a loopback port (printed on its first line) until
stdin closes. ``measure_echo`` starts it in a child process and times ``count`` 64-byte round trips,
one every ``1 / rate`` seconds, as the end-to-end latency stream paces its messages. No rocketq code
runs on the path, so the result is what the machine, the kernel and an asyncio loop cost: the idle
wake-ups of two processes, which every message of the latency stream pays at least once.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from rocketq.bench.pacing import paced

PAYLOAD = b"x" * 64


@contextlib.asynccontextmanager
async def echo_connection() -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """An echo server in a child process, for as long as the context lasts; yields ``round_trip()``,
    which sends ``PAYLOAD`` and waits for it to come back."""
    child = subprocess.Popen(
        [sys.executable, "-m", "rocketq.bench.echo"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        port = int(await asyncio.to_thread(child.stdout.readline))
        reader, writer = await asyncio.open_connection("127.0.0.1", port)

        async def round_trip() -> None:
            writer.write(PAYLOAD)
            await reader.readexactly(len(PAYLOAD))

        try:
            yield round_trip
        finally:
            writer.close()
            await writer.wait_closed()
    finally:
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                pipe.close()
        child.wait(10)


async def measure_echo(rate: int, count: int) -> list[int]:
    """Round-trip times in ns of ``count`` paced pings to an echo server in a child process."""
    async with echo_connection() as round_trip:
        rtts: list[int] = []

        async def timed(sent_ns: int) -> None:
            await round_trip()
            rtts.append(time.perf_counter_ns() - sent_ns)

        await paced(rate, count, timed)
        return rtts


async def _serve() -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            writer.write(data)
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.to_thread(sys.stdin.read)  # until the parent closes our stdin
    server.close()


def main() -> None:
    try:
        import uvloop
    except ImportError:
        asyncio.run(_serve())
    else:
        uvloop.run(_serve())


if __name__ == "__main__":
    main()
