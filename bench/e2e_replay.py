"""The broker's work per message of the end-to-end latency stream, without sockets: a consumer's pull
held on a queue, then for each message one SEND_MESSAGE_V2 read (which answers the held pull and the
send) and the consumer's next pull read (which finds nothing new and is held again, once the held one
was answered, as a consumer sends it), each followed by a loop turn, as `rocketq bench consumer --only
e2e_latency` makes the broker do it, on uvloop as the broker runs. The producer and the consumer share
one connection, as the clients of one process do (``rocketq.client.client_links``); with
``--two-connections`` each has its own (as before session 26). Connections are a started broker's
server connections over fake transports; the frames are made by the clients' own request builders.
Prints the process CPU per message of each third of the stream and checks every answer (each held
pull answered with exactly the message sent, at its offset). The broker is driven through its private
server (``Broker._server``): a benchmark's shortcut, not an API.

Instructions per message, which do not swing with the host's load (docs/consume-path.md, "session 21
(e2e-broker)"): count only inside the connections' reads and the loop's dispatch pass::

    PYTHONHASHSEED=0 ROCKETQ_NATIVE=required ROCKETQ_COMPILED_DISPATCH=0 valgrind --tool=callgrind \\
      --collect-atstart=no --toggle-collect=CPyPy_connection___Connection___buffer_updated \\
      --toggle-collect=CPyPy_loop_dispatch___LoopDispatch____run .venv/bin/python bench/e2e_replay.py 300

The count includes the start (the first send creates the topic): run it twice, with 300 and 600
messages, and divide the difference by 300.

``--pace-ms N`` pauses N ms between messages, asleep (as the live broker waits in ``epoll_pwait``
between the stream's messages) or with ``--spin`` spinning, and also prints the loop thread's CPU per
message between the pauses and its context switches; ``--evict-mb N`` copies N MB between messages
instead (the caches filled with other data, the thread never leaving its core). The same work costs
2-5x as much run cold (docs/consume-path.md, "session 21, e2e-wake").
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import send_replay  # (bench/, beside this script)
import uvloop

from rocketq.client import ProducerConfig
from rocketq.client.message import MessageQueue, decode_messages
from rocketq.client.pull import pull_request
from rocketq.client.send_checks import SendSettings, send_request
from rocketq.common.message import encode_properties
from rocketq.protocol import FrameDecoder, ResponseCode
from rocketq.protocol.frame import encode_frame
from rocketq.testing.cluster import LocalCluster

TOPIC = "BenchTopic"
GROUP = "bench_group"
SUSPEND_MS = 20_000


class FakeTransport(send_replay.FakeTransport):
    """``send_replay``'s transport, with what was written taken back."""

    def taken(self) -> bytes:
        """What was written since the last call."""
        data = b"".join(bytes(part) for part in self.parts)
        self.parts.clear()
        return data


async def replay(messages: int, pace_ms: float, spin: bool, evict_mb: int, shared: bool) -> None:
    with tempfile.TemporaryDirectory() as root:
        async with LocalCluster(Path(root)) as cluster:
            broker = cluster.brokers[0]
            server: Any = broker._server  # type: ignore[attr-defined]
            producer, producer_out = server._new_connection(), FakeTransport()
            producer.connection_made(producer_out)
            consumer, consumer_out = producer, producer_out  # one client instance: one connection
            if not shared:
                consumer, consumer_out = server._new_connection(), FakeTransport()
                consumer.connection_made(consumer_out)
            config = ProducerConfig(group="bench_producer")
            queue = MessageQueue(TOPIC, broker.config.broker_name, 0)

            def send_frame(index: int) -> bytes:
                properties = encode_properties({"WAIT": "true", "UNIQ_KEY": uuid.uuid4().hex.upper(), "i": str(index)})
                return encode_frame(send_request(SendSettings(config), queue, b"x" * 100, properties, 0, 0))

            def pull_frame(offset: int) -> bytes:
                request = pull_request(GROUP, queue, offset, 32, "*", commit_offset=offset, suspend_ms=SUSPEND_MS)
                return encode_frame(request)

            send_replay.received(producer, send_frame(-1))  # creates the topic (queue 0's offset 0)
            await asyncio.sleep(0.05)
            producer_out.taken()
            sends = [send_frame(index) for index in range(messages)]
            pulls = [pull_frame(offset) for offset in range(1, messages + 2)]
            send_replay.received(consumer, pulls[0])  # held: nothing after offset 1 yet
            await asyncio.sleep(0)
            assert not consumer_out.parts, "the first pull was answered instead of held"

            third = max(1, messages // 3)
            written = 0  # parts written to the consumer: the next pull is sent once the held one is answered
            scratch = (bytearray(evict_mb << 20), bytes(evict_mb << 20)) if evict_mb else None
            figures, loop_figures = [], []
            switches_before = resource.getrusage(resource.RUSAGE_THREAD)
            for start in range(0, messages, third):
                began, on_loop = time.process_time(), 0.0
                message_began = time.thread_time()
                for index in range(start, min(start + third, messages)):
                    if pace_ms or scratch:
                        if index > start:  # the previous message's work, from its pause's end to now
                            on_loop += time.thread_time() - message_began
                        if scratch:  # the caches filled with other data, the thread still on its core
                            scratch[0][:] = scratch[1]
                        else:
                            _pause(pace_ms, spin)
                        message_began = time.thread_time()
                    send_replay.received(producer, sends[index])
                    await asyncio.sleep(0)
                    while len(consumer_out.parts) == written:  # (the dispatcher thread took the put: rare)
                        await asyncio.sleep(0.0001)
                    written = len(consumer_out.parts)
                    send_replay.received(consumer, pulls[index + 1])
                    await asyncio.sleep(0)
                done = min(start + third, messages) - start
                figures.append((time.process_time() - began) / done * 1e6)
                loop_figures.append(on_loop / max(1, done - 1) * 1e6)
            answers = FrameDecoder().decode(consumer_out.taken())
            if shared:  # the sends' answers came on the same connection
                answers = [answer for answer in answers if "nextBeginOffset" in answer.ext_fields]
            _check(answers, messages)
            print(
                "µs per message:", " ".join(f"{figure:.2f}" for figure in figures), f"({len(answers)} pulls answered)"
            )
            if pace_ms or scratch:
                between = " ".join(f"{figure:.2f}" for figure in loop_figures)
                print("of which the loop thread's, between pauses:", between)
            switches = resource.getrusage(resource.RUSAGE_THREAD)
            print(
                "the loop thread's context switches per message:",
                f"{(switches.ru_nvcsw - switches_before.ru_nvcsw) / messages:.2f} voluntary,",
                f"{(switches.ru_nivcsw - switches_before.ru_nivcsw) / messages:.2f} involuntary",
            )


def _pause(pace_ms: float, spin: bool) -> None:
    """Wait ``pace_ms`` between messages as the live broker does between sends: asleep (the thread
    leaves its core, as the broker's loop does in ``epoll_pwait``) or spinning (the core stays this
    thread's, its caches warm). The wait is the loop thread's own and blocks the loop, as an idle
    loop would not run anything either (the broker's other threads still run)."""
    if spin:
        until = time.perf_counter() + pace_ms / 1000
        while time.perf_counter() < until:
            pass
    else:
        time.sleep(pace_ms / 1000)


def _check(answers: list[Any], messages: int) -> None:
    assert len(answers) == messages, f"{len(answers)} pull answers for {messages} messages"
    for index, answer in enumerate(answers):
        assert answer.code == ResponseCode.SUCCESS, (index, answer)
        (message,) = decode_messages(answer.body)
        assert message.properties["i"] == str(index) and message.queue_offset == index + 1, message
        assert answer.ext_fields["nextBeginOffset"] == str(index + 2), answer.ext_fields


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("messages", type=int, nargs="?", default=3000)
    parser.add_argument("--pace-ms", type=float, default=0.0, help="pause between messages, as a paced stream")
    parser.add_argument("--spin", action="store_true", help="pause spinning instead of asleep")
    parser.add_argument("--evict-mb", type=int, default=0, help="instead of a pause, copy this many MB")
    parser.add_argument(
        "--two-connections", action="store_true", help="the producer and the consumer on connections of their own"
    )
    options = parser.parse_args()
    # the broker's loop (``rocketq.runner``)
    uvloop.run(replay(options.messages, options.pace_ms, options.spin, options.evict_mb, not options.two_connections))


if __name__ == "__main__":
    main()
