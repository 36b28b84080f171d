"""rocketq beside Redis Streams and RabbitMQ, shape by shape, in alternating rounds, with the ratios.

Not part of rocketq and not installed with it: it needs the peers' servers and Python clients.

    apt-get install redis-server rabbitmq-server
    python3 -m venv /tmp/peers && /tmp/peers/bin/pip install redis hiredis uvloop pika
    /tmp/peers/bin/python bench/peers/peer_throughput.py --rocketq .venv/bin/rocketq --rounds 3

Shapes (100-byte bodies unless ``--size``). rocketq's side is always a ``rocketq bench`` command run
as a child (which starts its own NameServer and broker in a child process of its own, ASYNC_FLUSH
unless said); Redis runs without persistence:

- ``sync_single``: one call at a time through the blocking API: ``SyncProducer.send`` against
  redis-py's ``XADD`` (``rocketq bench producer --sync-api --inflight 1``); the asyncio
  ``Producer.send`` one at a time is measured beside it (``sync_vs_asyncio``);
- ``inflight_100``: 100 asyncio ``Producer.send`` in flight against ``XADD`` pipelined 100 at a time;
- ``batch_100``: ``Producer.send_batch`` of 100, one at a time, against the same pipeline;
- ``sync_drain``: a backlog of ``--backlog`` messages read by a new group through the blocking
  ``SyncPullConsumer.poll`` (``rocketq bench consumer --only pull_drain``, its ``api: sync`` row;
  the asyncio ``PullConsumer.poll`` row is printed beside it, ``sync_vs_asyncio``) against ``XREADGROUP COUNT 1000`` and
  an ``XACK`` of each batch, on a stream filled beforehand;
- ``e2e_latency``: p50 and p99 from the send call to the consumer at 1,000 messages per second
  (``rocketq bench consumer --only e2e_latency --listener async``, a push consumer whose listener is a
  coroutine on its loop, like Redis's reader; the same with a plain-function listener, run in the
  consumer's thread pool, is printed beside it as ``thread_listener_*``) against Redis as
  ``peer_latency.py`` measures it (XADD awaited, XREAD BLOCK on a second connection); the ratios
  are rocketq's latency over Redis's (lower is better);
- ``sync_flush_64``: the broker with SYNC_FLUSH and 64 asyncio sends in flight (``rocketq bench
  producer --flush --inflight 64``) against RabbitMQ publisher confirms one message at a time
  (persistent messages, durable queue; ``rabbitmq.py``); skipped, with a line saying so, where
  rabbitmq-server is not installed.

Each round measures every shape on both systems, rocketq first in odd rounds and the peer first in
even ones, so the host's swings hit both. One JSON object per measurement is printed, then one per
shape with each figure's median over rounds for both systems and ``ratio`` (the median over rounds
of rocketq's figure over the peer's in the same round; for throughput higher is better, for latency
lower).
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rabbitmq

SERVER_START_S = 0.5
PIPELINE = 100
READ_COUNT = 1000
LATENCY_RATE = 1000
Figures = dict[str, float]


@dataclass(frozen=True)
class Options:
    rocketq: str
    size: int
    seconds: float
    backlog: int


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


# -- the peers' sides -------------------------------------------------------------------------------


def redis_send_rate(client: Any, shape: str, options: Options) -> Figures:
    """Messages per second XADDed in the shape's Redis counterpart."""
    body = b"x" * options.size
    client.delete("s")
    sent = 0
    deadline = time.perf_counter() + options.seconds
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
    return {"msgs_per_s": sent / (time.perf_counter() - began)}


def redis_drain_rate(client: Any, shape: str, options: Options) -> Figures:
    """A stream of ``backlog`` entries (written beforehand) read by a new group, ``XREADGROUP COUNT
    1000`` then ``XACK`` of what it returned, until all were read."""
    body = b"x" * options.size
    client.delete("d")
    for start in range(0, options.backlog, 1000):
        pipeline = client.pipeline(transaction=False)
        for _ in range(min(1000, options.backlog - start)):
            pipeline.xadd("d", {"b": body})
        pipeline.execute()
    client.xgroup_create("d", "g", id="0")
    read = 0
    began = time.perf_counter()
    while read < options.backlog:
        for _, entries in client.xreadgroup("g", "c", {"d": ">"}, count=READ_COUNT):
            client.xack("d", "g", *(entry_id for entry_id, _ in entries))
            read += len(entries)
    seconds = time.perf_counter() - began
    client.delete("d")
    return {"msgs_per_s": read / seconds}


def redis_latency(client: Any, shape: str, options: Options) -> Figures:
    """``peer_latency.py``'s Redis stream (a server of its own) for ``seconds`` at 1,000 per second, on uvloop
    (as rocketq's bench runs its producer and consumer: the same event loop on both sides)."""
    import uvloop

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))  # rocketq.bench.pacing, stdlib only
    import peer_latency

    scratch = tempfile.mkdtemp(prefix="peer-redis-latency-")
    try:
        latencies = uvloop.run(peer_latency.redis_streams(round(LATENCY_RATE * options.seconds), scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {"p50_us": peer_latency.percentile_us(latencies, 0.5), "p99_us": peer_latency.percentile_us(latencies, 0.99)}


def rabbitmq_confirm_rate(connection: Any, shape: str, options: Options) -> Figures:
    return {"msgs_per_s": rabbitmq.confirmed_rate(connection, options.size, options.seconds)}


# -- rocketq's side: its bench commands -------------------------------------------------------------


def rocketq_rows(options: Options, *args: str) -> list[dict[str, Any]]:
    """The JSON lines of ``rocketq bench ARGS --size SIZE --json``."""
    command = [options.rocketq, "bench", *args, "--size", str(options.size), "--json"]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def rocketq_producer(*args: str) -> Callable[[Options], Figures]:
    def run(options: Options) -> Figures:
        summary = rocketq_rows(options, "producer", *args, "--duration", str(options.seconds))[-1]
        return {"msgs_per_s": float(summary["msgs_per_s"])}

    return run


def rocketq_sync_single(options: Options) -> Figures:
    """``SyncProducer.send`` one at a time, then ``Producer.send`` (asyncio) one at a time beside it."""
    blocking = rocketq_producer("--sync-api", "--inflight", "1")(options)
    asyncio_single = rocketq_producer("--inflight", "1")(options)
    return {**blocking, "asyncio_msgs_per_s": asyncio_single["msgs_per_s"]}


def rocketq_sync_drain(options: Options) -> Figures:
    rows = rocketq_rows(options, "consumer", "--only", "pull_drain", "--backlog", str(options.backlog))
    by_api = {row["api"]: row for row in rows if row["name"] == "pull_drain"}
    return {
        "msgs_per_s": float(by_api["sync"]["msgs_per_s"]),
        "asyncio_msgs_per_s": float(by_api["asyncio"]["msgs_per_s"]),
    }


def rocketq_latency(options: Options) -> Figures:
    """A coroutine listener (run on the consumer's loop, as Redis's reader is a coroutine on its loop),
    compared; then a plain-function listener (run in the consumer's thread pool) beside it."""
    args = ["--only", "e2e_latency", "--rate", str(LATENCY_RATE), "--latency-seconds", str(options.seconds)]
    row = rocketq_rows(options, "consumer", *args, "--listener", "async")[-1]
    threaded = rocketq_rows(options, "consumer", *args, "--listener", "sync")[-1]
    return {
        "p50_us": float(row["p50_us"]),
        "p99_us": float(row["p99_us"]),
        "thread_listener_p50_us": float(threaded["p50_us"]),
        "thread_listener_p99_us": float(threaded["p99_us"]),
    }


@dataclass(frozen=True)
class Shape:
    peer: str  # "redis" or "rabbitmq": which server ``peer_side`` is handed
    rocketq_side: Callable[[Options], Figures]
    peer_side: Callable[[Any, str, Options], Figures]
    compared: tuple[str, ...] = ("msgs_per_s",)  # the figures given a ratio


SHAPES: dict[str, Shape] = {
    "sync_single": Shape("redis", rocketq_sync_single, redis_send_rate),
    "inflight_100": Shape("redis", rocketq_producer("--inflight", "100"), redis_send_rate),
    "batch_100": Shape("redis", rocketq_producer("--batch", "100", "--inflight", "1"), redis_send_rate),
    "sync_drain": Shape("redis", rocketq_sync_drain, redis_drain_rate),
    "e2e_latency": Shape("redis", rocketq_latency, redis_latency, ("p50_us", "p99_us")),
    "sync_flush_64": Shape("rabbitmq", rocketq_producer("--flush", "--inflight", "64"), rabbitmq_confirm_rate),
}


def main(options: Options, rounds: int, shapes: list[str]) -> None:
    if "sync_flush_64" in shapes and not rabbitmq.installed():
        print(
            json.dumps({"shape": "sync_flush_64", "skipped": f"rabbitmq-server is not installed ({rabbitmq.SERVER})"})
        )
        shapes = [shape for shape in shapes if shape != "sync_flush_64"]
    measured: dict[str, dict[str, list[Figures]]] = {shape: {"rocketq": [], "peer": []} for shape in shapes}
    with ExitStack() as stack:
        starts = {"redis": redis_server, "rabbitmq": rabbitmq.rabbitmq_server}
        needed = sorted({SHAPES[shape].peer for shape in shapes})
        entered = {peer: stack.enter_context(starts[peer]()) for peer in needed}
        if "redis" in entered:
            redis_send_rate(entered["redis"], "inflight_100", Options(options.rocketq, options.size, 1.0, 0))  # warm-up
        for round_number in range(1, rounds + 1):
            for name in shapes:
                shape = SHAPES[name]
                order = ["rocketq", "peer"] if round_number % 2 else ["peer", "rocketq"]
                for system in order:
                    if system == "rocketq":
                        figures = shape.rocketq_side(options)
                    else:
                        figures = shape.peer_side(entered[shape.peer], name, options)
                    measured[name][system].append(figures)
                    label = "rocketq" if system == "rocketq" else shape.peer
                    rounded = {key: round(value) for key, value in figures.items()}
                    print(json.dumps({"round": round_number, "shape": name, "system": label, **rounded}), flush=True)
    for name in shapes:
        print(json.dumps(summary(name, measured[name]["rocketq"], measured[name]["peer"])), flush=True)


def summary(name: str, ours: list[Figures], theirs: list[Figures]) -> dict[str, Any]:
    """Medians over rounds of both systems' figures, and of the per-round ratios of the compared ones."""
    shape = SHAPES[name]
    line: dict[str, Any] = {"shape": name, "peer": shape.peer}
    for key in ours[0]:
        line[f"rocketq_{key}"] = round(statistics.median(figures[key] for figures in ours))
    for key in theirs[0]:
        line[f"{shape.peer}_{key}"] = round(statistics.median(figures[key] for figures in theirs))
    for key in shape.compared:
        ratios = [mine[key] / peer[key] for mine, peer in zip(ours, theirs, strict=True)]
        suffix = "" if len(shape.compared) == 1 else f"_{key.removesuffix('_us')}"
        line[f"ratio{suffix}"] = round(statistics.median(ratios), 3)
        line[f"ratios{suffix}"] = [round(ratio, 3) for ratio in ratios]
    if "asyncio_msgs_per_s" in ours[0]:  # the blocking API over the asyncio one, in the same rounds
        blocking = [figures["msgs_per_s"] / figures["asyncio_msgs_per_s"] for figures in ours]
        line["sync_vs_asyncio"] = round(statistics.median(blocking), 3)
        line["sync_vs_asyncio_all"] = [round(ratio, 3) for ratio in blocking]
    return line


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rocketq", default=".venv/bin/rocketq", help="the rocketq command to measure")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each measured run")
    parser.add_argument("--backlog", type=int, default=200_000, help="messages each drain reads")
    parser.add_argument("--shape", action="append", choices=list(SHAPES), help="shapes to run (default: all)")
    parsed = parser.parse_args()
    options = Options(parsed.rocketq, parsed.size, parsed.seconds, parsed.backlog)
    main(options, parsed.rounds, parsed.shape or list(SHAPES))
