"""The broker's work per single-message send, without sockets: SEND_MESSAGE_V2 frames (100-byte bodies,
made by the producer's own ``send_request``) handed to a started broker's server connection in reads
of ``per_read`` over a fake transport, with a loop turn after each read (the loop's dispatch pass runs
there). Prints the process CPU per request of each third of the reads. The broker is driven through
its private server (``Broker._server``): a benchmark's shortcut, not an API.

Instructions per request, which do not swing with the host's load (docs/producer-path.md, "session 20
(broker-send)"): count only inside the connection's read and the loop's dispatch pass::

    PYTHONHASHSEED=0 ROCKETQ_NATIVE=required ROCKETQ_COMPILED_DISPATCH=0 valgrind --tool=callgrind \\
      --collect-atstart=no --toggle-collect=CPyPy_connection___Connection___buffer_updated \\
      --toggle-collect=CPyPy_loop_dispatch___LoopDispatch____run .venv/bin/python bench/send_replay.py 300 8

(``ROCKETQ_COMPILED_DISPATCH=0`` keeps numba from loading under valgrind, which takes many minutes; at 8
requests per read the dispatch pass does not use the numba scan anyway.) Divide the total by
``reads * per_read + 1``.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from rocketq.client import ProducerConfig
from rocketq.client.message import MessageQueue
from rocketq.client.send_checks import SendSettings, send_request
from rocketq.common.message import encode_properties
from rocketq.protocol.frame import encode_frame
from rocketq.testing.cluster import LocalCluster


class FakeTransport:
    """What a server connection calls on its transport, with writes kept in a list (C-level calls)."""

    is_closing = bool  # () -> False

    def __init__(self) -> None:
        self.parts: list[Any] = []
        self.write = self.parts.append
        self.writelines = self.parts.extend

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name == "peername" else default

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


def received(connection: Any, data: bytes) -> None:
    """``data`` handed to a connection as its transport would: copied into the buffers it offers
    (``asyncio.BufferedProtocol``), a read per buffer."""
    view = memoryview(data)
    while view:
        room = connection.get_buffer(len(view))
        size = min(len(room), len(view))
        room[:size] = view[:size]
        view = view[size:]
        connection.buffer_updated(size)


async def replay(reads: int, per_read: int) -> None:
    with tempfile.TemporaryDirectory() as root:
        async with LocalCluster(Path(root)) as cluster:
            broker = cluster.brokers[0]
            connection = broker._server._new_connection()  # type: ignore[union-attr]
            transport = FakeTransport()
            connection.connection_made(transport)  # type: ignore[arg-type]
            config = ProducerConfig(group="bench_group")
            queues = [MessageQueue("BenchTopic", broker.config.broker_name, queue_id) for queue_id in range(4)]

            def read(count: int) -> bytes:
                frames = []
                for index in range(count):
                    properties = encode_properties({"WAIT": "true", "UNIQ_KEY": uuid.uuid4().hex.upper()})
                    request = send_request(SendSettings(config), queues[index % 4], b"x" * 100, properties, 0, 0)
                    frames.append(encode_frame(request))
                return b"".join(frames)

            received(connection, read(1))  # creates the topic
            await asyncio.sleep(0.05)
            all_reads = [read(per_read) for _ in range(reads)]
            third = max(1, reads // 3)
            figures = []
            for start in range(0, reads, third):
                began = time.process_time()
                for data in all_reads[start : start + third]:
                    received(connection, data)
                    await asyncio.sleep(0)
                done = len(all_reads[start : start + third]) * per_read
                figures.append((time.process_time() - began) / done * 1e6)
            written = sum(len(part) for part in transport.parts)
            print("µs per request:", " ".join(f"{figure:.2f}" for figure in figures), f"(answers: {written} bytes)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reads", type=int, nargs="?", default=1500)
    parser.add_argument("per_read", type=int, nargs="?", default=16)
    options = parser.parse_args()
    asyncio.run(replay(options.reads, options.per_read))


if __name__ == "__main__":
    main()
