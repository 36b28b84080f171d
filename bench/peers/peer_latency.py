"""End-to-end latency of Redis Streams and NATS JetStream, paced like ``rocketq bench consumer``'s
``e2e_latency`` stream, so the three can be compared on one machine in the same hour.

Not part of rocketq and not installed with it: it needs the servers and their Python clients.

    apt-get install redis-server nats-server
    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install redis hiredis nats-py uvloop
    PYTHONPATH=src /tmp/peers/bin/python bench/peers/peer_latency.py redis nats

The schedule is rocketq's own (``rocketq.bench.pacing``, standard library only, hence ``PYTHONPATH=src``).
Each system gets a fresh server on a free loopback port with its data in a scratch directory (Redis
without persistence, JetStream with its default file storage). One producer connection sends a 100-byte
body every millisecond (the same schedule as rocketq's stream: message ``i`` at ``start + i ms``), each
send awaited (XADD's reply, JetStream's PubAck), with ``time.perf_counter_ns()`` taken just before the
send carried in the message. A consumer on a second connection of the same process (XREAD BLOCK; a
JetStream push subscription with its default acks) records ``now - sent``. 200 warm-up messages are
not counted. One JSON object per system is printed: ``name``, ``messages``, ``p50_us``, ``p99_us``,
``p999_us``, ``max_us``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from rocketq.bench.pacing import paced

RATE = 1000
SIZE = 100
WARMUP = 200
SERVER_START_S = 0.5
DRAIN_S = 0.5

Send = Callable[[int], Awaitable[object]]


async def measure(send: Send, latencies: list[int], count: int) -> list[int]:
    """Warm up, then the measured stream; the latencies the consumer recorded for it, sorted."""
    await paced(RATE, WARMUP, send)
    await asyncio.sleep(DRAIN_S)
    latencies.clear()
    await paced(RATE, count, send)
    await asyncio.sleep(DRAIN_S)
    return sorted(latencies)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@asynccontextmanager
async def server(command: list[str]) -> AsyncIterator[None]:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await asyncio.sleep(SERVER_START_S)
        if process.poll() is not None:
            raise RuntimeError(f"{command[0]} exited with code {process.returncode}")
        yield
    finally:
        process.kill()
        process.wait()


async def redis_streams(count: int, scratch: str) -> list[int]:
    import redis.asyncio as redis

    port = free_port()
    command = ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", scratch]
    async with server(command):
        producer, consumer = redis.Redis(port=port), redis.Redis(port=port)
        latencies: list[int] = []
        body = b"x" * SIZE

        async def consume() -> None:
            last: Any = "$"
            while True:
                batches = await consumer.xread({"s": last}, block=0, count=100)
                now = time.perf_counter_ns()
                for _, entries in batches:
                    for entry_id, fields in entries:
                        last = entry_id
                        latencies.append(now - int(fields[b"t"]))

        reading = asyncio.create_task(consume())
        try:
            await asyncio.sleep(0.1)  # XREAD from "$" must be waiting before the first XADD
            return await measure(lambda sent: producer.xadd("s", {"t": str(sent), "b": body}), latencies, count)
        finally:
            reading.cancel()
            await producer.aclose()
            await consumer.aclose()


async def nats_jetstream(count: int, scratch: str) -> list[int]:
    import nats

    port = free_port()
    command = ["nats-server", "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", scratch]
    async with server(command):
        producer = await nats.connect(f"nats://127.0.0.1:{port}")
        consumer = await nats.connect(f"nats://127.0.0.1:{port}")
        try:
            publisher = producer.jetstream()
            await publisher.add_stream(name="BENCH", subjects=["bench"])
            latencies: list[int] = []

            async def on_message(message: Any) -> None:
                latencies.append(time.perf_counter_ns() - int(message.headers["t"]))

            subscription = await consumer.jetstream().subscribe("bench", cb=on_message)
            body = b"x" * SIZE
            result = await measure(
                lambda sent: publisher.publish("bench", body, headers={"t": str(sent)}), latencies, count
            )
            await subscription.unsubscribe()
            return result
        finally:
            await producer.close()
            await consumer.close()


SYSTEMS = {"redis": redis_streams, "nats": nats_jetstream}


def percentile_us(latencies: list[int], fraction: float) -> float:
    return latencies[min(len(latencies) - 1, int(fraction * len(latencies)))] / 1000


async def main(names: list[str], seconds: float) -> None:
    count = round(RATE * seconds)
    for name in names:
        scratch = tempfile.mkdtemp(prefix=f"peer-{name}-")
        try:
            latencies = await SYSTEMS[name](count, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if not latencies:
            raise RuntimeError(f"{name}: no message arrived")
        report = {
            "name": name,
            "messages": len(latencies),
            "p50_us": round(percentile_us(latencies, 0.5)),
            "p99_us": round(percentile_us(latencies, 0.99)),
            "p999_us": round(percentile_us(latencies, 0.999)),
            "max_us": round(latencies[-1] / 1000),
        }
        print(json.dumps(report), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("systems", nargs="+", choices=sorted(SYSTEMS))
    parser.add_argument("--seconds", type=float, default=8.0, help="length of the measured stream")
    options = parser.parse_args()
    import uvloop

    uvloop.run(main(options.systems, options.seconds))
