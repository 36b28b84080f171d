"""The floor of ``e2e_latency`` for a Python broker: what the latency stream's p50 would be if the broker's
turn did (almost) no work, measured in the same minutes as the real broker and Redis.

Not part of rocketq and not installed with it. A real NameServer and broker run in a child process
(``rocketq.testing.ClusterProcess``), the broker advertising ``127.0.0.2:PORT`` while it listens on
``127.0.0.1:PORT``. In front of it, in a second child process on uvloop, the "floor broker" listens on
``127.0.0.2:PORT`` (the address the clients are routed to) and:

- answers a send (SEND_MESSAGE_V2) to a topic starting with ``--topic-prefix`` itself: a send answer
  written from a template, and the send's record (body and properties as sent, the offset the held pull
  asked for) handed to the pull held for its queue, or kept until that queue's next pull;
- holds a pull (PULL_MESSAGE) of such a topic until a send for its queue comes (or answers it at once
  from what was kept);
- forwards every other frame, both ways, to the real broker (routes, heartbeats, rebalance, offsets):
  one upstream connection per client connection, whole frames only, so nothing interleaves.

The bench (``rocketq bench consumer --only e2e_latency --namesrv ADDR``) runs in a third process, as
it runs against the real broker. The floor broker's work per message is a frame split, one JSON decode
per request, a record packed and two templated answers: what any Python broker must do at least, with
asyncio and uvloop around it. Knobs for the turn's shape (``Turn``), off by default: ``--send-answer-first``
(the real broker writes the pull's first), ``--before-us`` / ``--after-us`` (spin that long before the
answers / between the pull's and the send's, standing for a broker's work) and ``--yield-after-pull``
(``os.sched_yield()`` after the pull's answer): the order's own effect, with no other work in the turn.

Usage (from a worktree; each of ``--rounds`` runs the floor once per ``--variant`` (its knobs), then
the real broker (unless ``--no-broker``), then, with ``--redis PYTHON``, Redis's stream of
``bench/peers/peer_latency.py``; one JSON line per round, then the medians)::

    .venv/bin/python bench/floor_broker.py --rocketq .venv/bin/rocketq --rounds 3 --redis /tmp/peers/bin/python
    .venv/bin/python bench/floor_broker.py --no-broker --variant "" --variant "--after-us 25 --yield-after-pull"
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SEND_V2 = b'{"code":310,'
PULL = b'{"code":11,'
STORE_HOST = socket.inet_aton("127.0.0.1") + (10911).to_bytes(4, "big")
ANSWER_END = ',"flag":1,"language":"JAVA","opaque":%d,"serializeTypeCurrentRPC":"JSON","version":0}'


def frame(header: str, body: bytes = b"") -> bytes:
    """A JSON-header frame: total length, header length (serialisation type 0: JSON), header, body."""
    raw = header.encode()
    return (4 + len(raw) + len(body)).to_bytes(4, "big") + len(raw).to_bytes(4, "big") + raw + body


def split_frames(buffer: bytearray) -> list[bytes]:
    """The whole frames at the start of ``buffer`` (removed from it), each with its length prefix."""
    frames = []
    start = 0
    end = len(buffer)
    while end - start >= 4:
        total = int.from_bytes(buffer[start : start + 4], "big")
        if end - start < 4 + total:
            break
        frames.append(bytes(buffer[start : start + 4 + total]))
        start += 4 + total
    del buffer[:start]
    return frames


def spin(microseconds: float) -> None:
    """Keep the CPU busy this long (work the floor broker is told to stand for)."""
    until = time.perf_counter_ns() + int(microseconds * 1000)
    while time.perf_counter_ns() < until:
        pass


@dataclass(frozen=True)
class Turn:
    """How the floor broker's turn on a send is shaped (the experiments' knobs; all off: the floor)."""

    send_answer_first: bool = False
    before_us: float = 0.0  # busy before the answers (standing for a real broker's work up to the put)
    after_us: float = 0.0  # busy between the held pull's answer and the send's (the rest of the send)
    yield_after_pull: bool = False  # os.sched_yield() once the held pull's answer is written


class Floor:
    """The held pulls and kept records of the floor broker, by (topic, queue id)."""

    def __init__(self, prefix: str, turn: Turn) -> None:
        from msgspec.json import Decoder  # the rocketq venv's (as the real broker's)

        from rocketq.common.record import StoredRecord, encode_record

        self.decode = Decoder().decode
        self.record = encode_record
        self.stored = StoredRecord
        self.prefix = prefix
        self.turn = turn
        self.held: dict[tuple[str, int], tuple[asyncio.Transport, int, int]] = {}
        self.kept: dict[tuple[str, int], list[tuple[bytes, str]]] = {}
        self.sends = 0

    def records(self, topic: str, queue_id: int, offset: int, messages: list[tuple[bytes, str]]) -> bytes:
        """The stored records of ``messages`` (body, properties), from ``offset`` on."""
        parts = []
        now = time.time_ns() // 1_000_000
        for index, (body, properties) in enumerate(messages):
            parts.append(
                self.record(
                    self.stored(
                        0,
                        0,
                        0,
                        queue_id,
                        0,
                        offset + index,
                        0,
                        0,
                        now,
                        STORE_HOST,
                        now,
                        STORE_HOST,
                        0,
                        0,
                        body=body,
                        topic=topic,
                        properties=properties,
                    )
                )
            )
        return b"".join(parts)

    def pull_answer(
        self, opaque: int, topic: str, queue_id: int, offset: int, messages: list[tuple[bytes, str]]
    ) -> bytes:
        end = offset + len(messages)
        header = (
            f'{{"code":0,"extFields":{{"suggestWhichBrokerId":"0","nextBeginOffset":"{end}","minOffset":"0",'
            f'"maxOffset":"{end}"}}' + ANSWER_END % opaque
        )
        return frame(header, self.records(topic, queue_id, offset, messages))

    def on_send(self, client: asyncio.Transport, header: bytes, body: bytes) -> bool:
        """Answer a send of a floor topic (False: not one, forward it)."""
        command = self.decode(header)
        fields = command["extFields"]
        topic = fields["b"]
        if not topic.startswith(self.prefix):
            return False
        queue_id = int(fields["e"])
        key = (topic, queue_id)
        self.sends += 1
        answer = frame(
            f'{{"code":0,"extFields":{{"msgId":"7F00000100002A9F{self.sends:016X}","queueId":"{queue_id}",'
            f'"queueOffset":"{self.sends}"}}' + ANSWER_END % command["opaque"]
        )
        turn = self.turn
        if turn.before_us:
            spin(turn.before_us)
        if turn.send_answer_first:
            client.write(answer)
        held = self.held.pop(key, None)
        message = (body, fields.get("i", ""))
        if held is None:
            self.kept.setdefault(key, []).append(message)
        else:
            puller, opaque, offset = held
            puller.write(self.pull_answer(opaque, topic, queue_id, offset, [message]))
            if turn.yield_after_pull:
                os.sched_yield()
        if turn.after_us:
            spin(turn.after_us)
        if not turn.send_answer_first:
            client.write(answer)
        return True

    def on_pull(self, client: asyncio.Transport, header: bytes) -> bool:
        """Hold (or answer from what was kept) a pull of a floor topic (False: not one, forward it)."""
        command = self.decode(header)
        fields = command["extFields"]
        topic = fields["topic"]
        if not topic.startswith(self.prefix):
            return False
        key = (topic, int(fields["queueId"]))
        offset = int(fields["queueOffset"])
        kept = self.kept.pop(key, None)
        if kept:
            client.write(self.pull_answer(command["opaque"], topic, key[1], offset, kept))
        else:
            self.held[key] = (client, command["opaque"], offset)
        return True


class Upstream(asyncio.Protocol):
    """The real broker's side of one client connection: its whole frames go to the client."""

    def __init__(self, client: asyncio.Transport) -> None:
        self.client = client
        self.buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        frames = split_frames(self.buffer)
        if frames:
            self.client.writelines(frames)

    def connection_lost(self, exc: Exception | None) -> None:
        self.client.close()


class Client(asyncio.Protocol):
    """One client connection to the floor broker."""

    def __init__(self, floor: Floor, upstream: tuple[str, int]) -> None:
        self.floor = floor
        self.upstream_address = upstream
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.upstream: asyncio.Transport | None = None
        self.waiting: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # (uvloop's: TCP_NODELAY already set)
        self.connecting = asyncio.ensure_future(self.connect())

    async def connect(self) -> None:
        assert self.transport is not None
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_connection(lambda: Upstream(self.transport), *self.upstream_address)  # type: ignore[arg-type]
        self.upstream = transport
        if self.waiting:
            transport.writelines(self.waiting)
            self.waiting = []

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        transport = self.transport
        assert transport is not None
        floor = self.floor
        for whole in split_frames(self.buffer):
            header_length = int.from_bytes(whole[4:8], "big") & 0xFFFFFF
            header = whole[8 : 8 + header_length]
            if header.startswith(SEND_V2):
                if floor.on_send(transport, header, whole[8 + header_length :]):
                    continue
            elif header.startswith(PULL) and floor.on_pull(transport, header):
                continue
            if self.upstream is None:
                self.waiting.append(whole)
            else:
                self.upstream.write(whole)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.upstream is not None:
            self.upstream.close()


async def serve(listen: str, upstream: str, prefix: str, turn: Turn) -> None:
    """Serve until stdin closes; prints ``ready`` once listening."""
    floor = Floor(prefix, turn)
    host, port = listen.rsplit(":", 1)
    up_host, up_port = upstream.rsplit(":", 1)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Client(floor, (up_host, int(up_port))), host, int(port))
    print("ready", flush=True)
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench(rocketq: str, namesrv: str | None) -> dict[str, float]:
    """One ``rocketq bench consumer --only e2e_latency`` run (against ``namesrv``, else its own broker)."""
    command = [rocketq, "bench", "consumer", "--only", "e2e_latency", "--rate", "1000", "--listener", "async"]
    command += ["--latency-seconds", "3", "--size", "100", "--json"]
    if namesrv is not None:
        command += ["--namesrv", namesrv]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    return next(row for row in rows if row.get("name") == "e2e_latency")


def redis(python: str) -> dict[str, float]:
    """One run of ``bench/peers/peer_latency.py redis`` (3 s, its own redis-server)."""
    script = Path(__file__).resolve().parent / "peers" / "peer_latency.py"
    source = str(Path(__file__).resolve().parents[1] / "src")  # (rocketq.bench.pacing: stdlib only)
    environment = {**os.environ, "PYTHONPATH": source}
    command = [python, str(script), "redis", "--seconds", "3"]
    output = subprocess.run(command, check=True, capture_output=True, text=True, env=environment)
    return next(json.loads(line) for line in output.stdout.splitlines() if line.startswith("{"))


@contextlib.contextmanager
def floor_server(python: str, port: str, options: list[str]) -> Iterator[subprocess.Popen[str]]:
    """The floor broker in a child process, in front of the real broker at ``127.0.0.1:port``."""
    command = [python, __file__, "--serve", f"127.0.0.2:{port}", f"127.0.0.1:{port}", *options]
    floor = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert floor.stdout is not None
        if floor.stdout.readline().strip() != "ready":
            raise SystemExit("the floor broker did not start")
        yield floor
    finally:
        assert floor.stdin is not None
        floor.stdin.close()
        floor.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rocketq", default=".venv/bin/rocketq", help="the rocketq command (its venv runs the floor)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each running every variant once")
    parser.add_argument(
        "--variant",
        action="append",
        help="the floor broker's options for one run of each round (repeatable; default: one plain floor),"
        " e.g. '--after-us 20 --yield-after-pull'",
    )
    parser.add_argument("--no-broker", action="store_true", help="no run against the real broker")
    parser.add_argument("--redis", metavar="PYTHON", help="also run Redis's stream each round, with this Python")
    parser.add_argument("--topic-prefix", default="BenchLatency")
    parser.add_argument("--send-answer-first", action="store_true", help="write the send's answer first")
    parser.add_argument("--before-us", type=float, default=0.0, help="spin this long before answering a send")
    parser.add_argument("--after-us", type=float, default=0.0, help="spin this long after the held pull's answer")
    parser.add_argument("--yield-after-pull", action="store_true", help="os.sched_yield() after the pull's answer")
    parser.add_argument("--serve", nargs=2, metavar=("LISTEN", "UPSTREAM"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        import uvloop

        turn = Turn(args.send_answer_first, args.before_us, args.after_us, args.yield_after_pull)
        uvloop.run(serve(args.serve[0], args.serve[1], args.topic_prefix, turn))
        return
    python = str(Path(args.rocketq).parent / "python")
    from rocketq.testing.cluster_process import ClusterProcess  # (run with the rocketq venv's python)

    variants = args.variant or [""]
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as root, ClusterProcess(Path(root), broker_ip1="127.0.0.2") as cluster:
        port = cluster.broker_addr.rsplit(":", 1)[1]
        for round_ in range(args.rounds):
            report: dict[str, object] = {"round": round_ + 1, "load": round(os.getloadavg()[0], 2)}
            for variant in variants:
                options = [*shlex.split(variant), "--topic-prefix", args.topic_prefix]
                with floor_server(python, port, options) as floor:
                    before = cpu_seconds(floor.pid)
                    row = bench(args.rocketq, cluster.namesrv_addr)
                    used = cpu_seconds(floor.pid) - before
                name = f"floor {variant}".strip()
                report[name] = {
                    "p50_us": row["p50_us"],
                    "p99_us": row["p99_us"],
                    "floor_cpu_us_per_msg": round(1e6 * used / row["sent"], 1),
                    "client_cpu_us_per_msg": row.get("cpu_us_per_msg"),
                }
                results.setdefault(name, []).append(row["p50_us"])
            if not args.no_broker:
                row = bench(args.rocketq, None)
                report["broker"] = {
                    key: row.get(key) for key in ("p50_us", "p99_us", "broker_cpu_us_per_msg", "cpu_us_per_msg")
                }
                results.setdefault("broker", []).append(row["p50_us"])
            if args.redis:
                row = redis(args.redis)
                report["redis"] = {"p50_us": row["p50_us"], "p99_us": row["p99_us"]}
                results.setdefault("redis", []).append(row["p50_us"])
            print(json.dumps(report), flush=True)
    print(json.dumps({"p50_median_us": {name: statistics.median(p50s) for name, p50s in results.items()}}))


if __name__ == "__main__":
    main()
