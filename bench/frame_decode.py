"""The frame decoder's cost per frame for the four frames each message of the end-to-end latency stream
crosses: the producer's SEND_MESSAGE_V2 request and the consumer's PULL_MESSAGE request (decoded by the
broker), the send's answer and the pull's answer with one message (decoded by the client), each made
by the code that makes it in the live stream (the clients' request builders, the broker's answer
builders). Prints the CPU per frame of each shape. ``--server``: decode the requests as a broker's
connection does (``keep_ext_json``) and read their headers as its send and pull handlers do
(``send_header``, ``pull_header``, the idempotent wrapper's ``ext_value``); count the whole process
then (no ``--toggle-collect``: the loop's own few hundred instructions per frame are in both runs).

Instructions per frame (host-independent): run under callgrind twice, with N and 2N frames, and divide
the difference by N; ``--toggle-collect`` on the decoder's entry point counts the decode alone::

    PYTHONHASHSEED=0 ROCKETQ_NATIVE=required valgrind --tool=callgrind --collect-atstart=no \\
      --toggle-collect='CPyDef_frame___FrameDecoder___buffer_updated' \\
      .venv/bin/python bench/frame_decode.py --shape send 300
"""

from __future__ import annotations

import argparse
import time
import uuid

from rocketq.broker.handlers.pull import pull_answer, pull_header
from rocketq.broker.handlers.send import send_answer
from rocketq.broker.send_request import send_header
from rocketq.client import ProducerConfig
from rocketq.client.message import MessageQueue
from rocketq.client.pull import pull_request
from rocketq.client.send_checks import SendSettings, send_request
from rocketq.common.message import encode_properties
from rocketq.protocol import FrameDecoder, RemotingCommand, ResponseCode, ext_value
from rocketq.protocol.frame import encode_frame

SHAPES = ("send", "pull", "send_answer", "pull_answer")


def frames(shape: str) -> bytes:
    """One frame of ``shape``, as the live stream's sender writes it."""
    queue = MessageQueue("BenchTopic", "broker-a", 0)
    properties = encode_properties({"WAIT": "true", "UNIQ_KEY": uuid.uuid4().hex.upper(), "i": "7"})
    send = send_request(SendSettings(ProducerConfig(group="bench_producer")), queue, b"x" * 100, properties, 0, 0)
    pull = pull_request("bench_group", queue, 12, 32, "*", commit_offset=12, suspend_ms=20_000)
    if shape == "send":
        return encode_frame(send)
    if shape == "pull":
        return encode_frame(pull)
    if shape == "send_answer":
        return encode_frame(send_answer(send, ResponseCode.SUCCESS, "7F00000100002A9F0000000000012345", 0, 12))
    return encode_frame(pull_answer(pull, ResponseCode.SUCCESS, 0, 13, 0, 13, b"r" * 180))


def read_header(command: RemotingCommand) -> object:
    """What the broker's handlers read of a send or pull request's header."""
    if command.code == 11:
        return pull_header(command)
    return ext_value(command, "rqIdempotent"), send_header(command)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", type=int, nargs="?", default=100_000)
    parser.add_argument("--shape", choices=SHAPES, action="append", help="(default: every shape)")
    parser.add_argument("--server", action="store_true", help="the requests as the broker decodes and reads them")
    options = parser.parse_args()
    for shape in options.shape or SHAPES[: 2 if options.server else 4]:
        frame = frames(shape)
        decoder = FrameDecoder(keep_ext_json=True) if options.server else FrameDecoder()
        size = len(frame)
        began = time.process_time()
        for _ in range(options.count):
            room = decoder.get_buffer()
            room[:size] = frame
            (command,) = decoder.buffer_updated(size)
            if options.server:
                read_header(command)
        spent = time.process_time() - began
        print(f"{shape}: {spent / options.count * 1e9:.0f} ns per frame ({size} bytes, code {command.code})")


if __name__ == "__main__":
    main()
