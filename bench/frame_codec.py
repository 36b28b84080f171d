"""The cost of one frame of the end-to-end latency stream, decoded or encoded on its own: the producer's
SEND_MESSAGE_V2 request and the consumer's PULL_MESSAGE request (encoded by the clients, decoded by the
broker), the broker's answers to them (encoded by the broker, decoded by the clients), and a C++
client's captured send and pull requests (decoded by the broker). The requests are the clients' own
builders' (``send_request``, ``pull_request``), the answers the broker's own (``send_answer``,
``pull_answer``). Prints ns per operation (wall clock, one thread: compare in one run only).

A decode is what a connection does with a read (the frame copied into ``get_buffer``'s memory, then
``buffer_updated``); an ``encode_*`` kind builds the request (or answer) and encodes its frame
(``encode_frame_parts``), a ``build_*`` kind only builds it.

Instructions per operation (docs/consume-path.md, "session 22, e2e-frames"), which do not swing with
the host's load: run one kind under callgrind, counting only inside the compiled functions it calls,
and divide by N::

    ROCKETQ_NATIVE=required valgrind --tool=callgrind --collect-atstart=no \\
      --toggle-collect=CPyPy_frame___FrameDecoder___buffer_updated \\
      .venv/bin/python bench/frame_codec.py --only decode_send -n 2000

(for the encodes, ``--toggle-collect=CPyPy_send_checks___send_request`` or
``CPyPy_pull___pull_request`` or ``CPyPy_send___send_answer`` or ``CPyPy_pull___pull_answer``, and
``--toggle-collect=CPyPy_frame___encode_frame_parts``).
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from rocketq.broker.handlers.pull import pull_answer
from rocketq.broker.handlers.send import send_answer
from rocketq.client import ProducerConfig
from rocketq.client.message import MessageQueue
from rocketq.client.pull import pull_request
from rocketq.client.send_checks import SendSettings, send_request
from rocketq.common.message import encode_properties
from rocketq.protocol import FrameDecoder, ResponseCode
from rocketq.protocol.frame import encode_frame, encode_frame_parts

CAPTURES = Path(__file__).resolve().parent.parent / "tests" / "protocol" / "data" / "frames-raw-cpp-and-alions.jsonl"


def _captured(name: str) -> bytes:
    """The first C++ client frame of that request name in the captures (``CPP`` in its header)."""
    import json

    for line in CAPTURES.read_text().splitlines():
        row = json.loads(line)
        if row.get("name") == name and row.get("dir") == "in" and b'"CPP"' in bytes.fromhex(row["rawHex"]):
            return bytes.fromhex(row["rawHex"])
    raise LookupError(name)


def kinds() -> dict[str, Callable[[], object]]:
    """Each kind's one operation, as a function of no arguments."""
    config = ProducerConfig(group="bench_producer")
    queue = MessageQueue("BenchTopic", "broker-a", 0)
    properties = encode_properties({"WAIT": "true", "UNIQ_KEY": uuid.uuid4().hex.upper(), "i": "1"})
    body = b"x" * 100

    def send() -> object:
        return send_request(SendSettings(config), queue, body, properties, 0, 0)

    def pull() -> object:
        return pull_request("bench_group", queue, 12345, 32, "*", commit_offset=12345, suspend_ms=20_000)

    send_frame, pull_frame = encode_frame(send()), encode_frame(pull())
    request = FrameDecoder().decode(send_frame)[0]
    held = FrameDecoder().decode(pull_frame)[0]
    send_answer_frame = encode_frame(send_answer(request, ResponseCode.SUCCESS, "0A" * 16, 0, 12345))
    pull_answer_frame = encode_frame(pull_answer(held, ResponseCode.SUCCESS, 0, 12346, 0, 12346, b"m" * 180))
    cpp_send, cpp_pull = _captured("SEND_MESSAGE"), _captured("PULL_MESSAGE")
    decoder = FrameDecoder()

    def decoding(frame: bytes) -> Callable[[], object]:
        size = len(frame)

        def receive() -> object:  # as a connection's transport does: the read lands in the decoder's buffer
            room = decoder.get_buffer()
            room[:size] = frame
            return decoder.buffer_updated(size)

        return receive

    return {
        "encode_send": lambda: encode_frame_parts(send()),
        "encode_pull": lambda: encode_frame_parts(pull()),
        "build_send": send,
        "build_pull": pull,
        "decode_send": decoding(send_frame),
        "decode_pull": decoding(pull_frame),
        "decode_cpp_send": decoding(cpp_send),
        "decode_cpp_pull": decoding(cpp_pull),
        "decode_send_answer": decoding(send_answer_frame),
        "decode_pull_answer": decoding(pull_answer_frame),
        "encode_send_answer": lambda: encode_frame_parts(send_answer(request, ResponseCode.SUCCESS, "0A" * 16, 0, 1)),
        "encode_pull_answer": lambda: encode_frame_parts(pull_answer(held, ResponseCode.SUCCESS, 0, 2, 0, 2, body)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=20_000, help="operations per kind")
    parser.add_argument("--only", help="run this kind only")
    options = parser.parse_args()
    table = kinds()
    for name, operation in table.items():
        if options.only and name != options.only:
            continue
        began = time.perf_counter_ns()
        for _ in range(options.n):
            operation()
        print(f"{name:20} {(time.perf_counter_ns() - began) / options.n:8.0f} ns")


if __name__ == "__main__":
    main()
