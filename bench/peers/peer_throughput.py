"""Producer throughput of rocketq beside Redis Streams, in alternating rounds, with the ratios.

Not part of rocketq and not installed with it: it needs redis-server and redis-py.

    apt-get install redis-server
    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install redis hiredis
    /tmp/peers/bin/python bench/peers/peer_throughput.py --rocketq .venv/bin/rocketq

Shapes (100-byte bodies unless ``--size``; rocketq's broker is the one ``rocketq bench producer``
starts in a child process, ASYNC_FLUSH; Redis runs without persistence):

- ``sync_single``: one call at a time through the blocking API: ``SyncProducer.send`` against
  redis-py's ``XADD``;
- ``inflight_100``: 100 asyncio ``Producer.send`` in flight against ``XADD`` pipelined 100 at a time;
- ``batch_100``: ``Producer.send_batch`` of 100, one at a time, against the same pipeline.

Each round measures every shape on both systems, rocketq first in odd rounds and Redis first in even
ones, so the host's swings hit both. One JSON object per measurement is printed, then one per shape
with ``ratio`` (the median over rounds of rocketq's rate over Redis's in the same round).
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

SERVER_START_S = 0.5
SHAPES: dict[str, list[str]] = {
    "sync_single": ["--sync-api", "--inflight", "1"],
    "inflight_100": ["--inflight", "100"],
    "batch_100": ["--batch", "100", "--inflight", "1"],
}
PIPELINE = 100


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def redis_server() -> Iterator[Any]:
    import redis

    port, scratch = free_port(), tempfile.mkdtemp(prefix="peer-redis-")
    command = ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", scratch]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(SERVER_START_S)
        if process.poll() is not None:
            raise RuntimeError(f"redis-server exited with code {process.returncode}")
        client = redis.Redis(port=port)
        try:
            yield client
        finally:
            client.close()
    finally:
        process.kill()
        process.wait()
        shutil.rmtree(scratch, ignore_errors=True)


def redis_rate(client: Any, shape: str, size: int, seconds: float) -> float:
    """Messages per second XADDed in the shape's Redis counterpart."""
    body = b"x" * size
    client.delete("s")
    sent = 0
    deadline = time.perf_counter() + seconds
    began = time.perf_counter()
    if shape == "sync_single":
        while time.perf_counter() < deadline:
            client.xadd("s", {"b": body})
            sent += 1
    else:
        while time.perf_counter() < deadline:
            pipeline = client.pipeline(transaction=False)
            for _ in range(PIPELINE):
                pipeline.xadd("s", {"b": body})
            pipeline.execute()
            sent += PIPELINE
    return sent / (time.perf_counter() - began)


def rocketq_rate(rocketq: str, shape: str, size: int, seconds: float) -> dict[str, Any]:
    """``rocketq bench producer``'s summary line for the shape."""
    command = [rocketq, "bench", "producer", *SHAPES[shape], "--size", str(size), "--duration", str(seconds), "--json"]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    summary: dict[str, Any] = [json.loads(line) for line in output.splitlines() if line.startswith("{")][-1]
    return summary


def main(rocketq: str, rounds: int, size: int, seconds: float, shapes: list[str]) -> None:
    ratios: dict[str, list[float]] = {shape: [] for shape in shapes}
    rates: dict[str, dict[str, list[float]]] = {shape: {"rocketq": [], "redis": []} for shape in shapes}
    with redis_server() as client:
        redis_rate(client, "inflight_100", size, 1.0)  # warm-up
        for round_number in range(1, rounds + 1):
            for shape in shapes:
                measured: dict[str, float] = {}
                order = ["rocketq", "redis"] if round_number % 2 else ["redis", "rocketq"]
                for system in order:
                    if system == "rocketq":
                        measured[system] = float(rocketq_rate(rocketq, shape, size, seconds)["msgs_per_s"])
                    else:
                        measured[system] = redis_rate(client, shape, size, seconds)
                    rates[shape][system].append(measured[system])
                    print(json.dumps({"round": round_number, "shape": shape, "system": system,
                                      "msgs_per_s": round(measured[system])}), flush=True)  # fmt: skip
                ratios[shape].append(measured["rocketq"] / measured["redis"])
    for shape in shapes:
        summary = {
            "shape": shape,
            "rocketq_msgs_per_s": round(statistics.median(rates[shape]["rocketq"])),
            "redis_msgs_per_s": round(statistics.median(rates[shape]["redis"])),
            "ratio": round(statistics.median(ratios[shape]), 3),
            "ratios": [round(ratio, 3) for ratio in ratios[shape]],
        }
        print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rocketq", default=".venv/bin/rocketq", help="the rocketq command to measure")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each measured run")
    parser.add_argument("--shape", action="append", choices=sorted(SHAPES), help="shapes to run (default: all)")
    options = parser.parse_args()
    main(options.rocketq, options.rounds, options.size, options.seconds, options.shape or list(SHAPES))
