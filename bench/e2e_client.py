"""The clients' work per message of the end-to-end latency stream, against a real broker: one
``Producer.send`` awaited, then a coroutine-listener push consumer's delivery of that message, one
message at a time, as ``rocketq bench consumer --only e2e_latency --listener async`` makes them (the
producer and the consumer in this process on uvloop, the broker in a child process,
``ClusterProcess``). Prints the process CPU per message and checks that every message was delivered
once, in order.

Instructions per message (docs/consume-path.md, "the clients' instructions (session 22, e2e-client)"):
run it under callgrind (the broker's child is not traced), twice, with N and 2N messages, and divide
the difference by N (the start, the topic's creation and the warm-up cancel out)::

    PYTHONHASHSEED=0 OPENBLAS_NUM_THREADS=1 ROCKETQ_NATIVE=required valgrind --tool=callgrind \\
      --callgrind-out-file=cg.300 .venv/bin/python bench/e2e_client.py 300

(``OPENBLAS_NUM_THREADS=1``: the broker's imports bring numpy, whose idle threads spin under valgrind.)

The whole process's count is the client's cost per message. To split it, compare
``callgrind_annotate --inclusive=yes`` of the two runs function by function: compiled functions keep
their C names, e.g. ``CPyDef_producer___send_Producer_gen_____mypyc_generator_helper__`` (both steps of
``Producer.send``) or ``CPyDef_consumer_core___read_pull_once_ConsumerCore_obj_____call__`` (the reader
of a pull's answer, the hand-over to the listener and its run included).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import tempfile
import time
from pathlib import Path

from rocketq.bench.running import CLUSTER_SETTINGS, create_topic, run_loop
from rocketq.client import ClientConfig, ConsumerConfig, Message, MessageExt, Producer, ProducerConfig, PushConsumer
from rocketq.client.admin import AdminClient
from rocketq.client.config import ConsumeFromWhere
from rocketq.testing.cluster_process import ClusterProcess

TOPIC = "E2eClientTopic"
WARMUP = 200


async def stream(namesrv_addr: str, count: int) -> None:
    async with AdminClient(namesrv_addr) as admin:
        await create_topic(admin, TOPIC)
    delivered: list[bytes] = []
    arrived = asyncio.Event()

    async def on_messages(messages: list[MessageExt]) -> None:
        delivered.extend(message.body for message in messages)
        arrived.set()

    config = ConsumerConfig(
        group="e2e-client",
        client=ClientConfig(namesrv_addr=namesrv_addr, instance_name="e2e-client"),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
    )
    consumer = PushConsumer(config, on_messages)
    consumer.subscribe(TOPIC)
    producer = Producer(ProducerConfig(group="e2e-client-producer", client=config.client))  # one connection
    async with consumer, producer:
        deadline = time.monotonic() + 30
        while len(consumer.assigned_queues) < 8:
            if time.monotonic() > deadline:
                raise SystemExit("the consumer was not assigned the topic's queues")
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)  # the held pulls reach the broker

        async def one(number: int) -> None:
            arrived.clear()
            body = b"%08d" % number + b"x" * 92
            # one user property, as the latency stream's messages carry their send time
            await producer.send(Message(TOPIC, body, properties={"benchSentNs": str(time.perf_counter_ns())}))
            while len(delivered) <= number:
                await arrived.wait()
                arrived.clear()

        for number in range(WARMUP):
            await one(number)
        began, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        for number in range(WARMUP, WARMUP + count):
            await one(number)
        seconds, used = time.perf_counter() - began, resource.getrusage(resource.RUSAGE_SELF)
    expected = [b"%08d" % number + b"x" * 92 for number in range(WARMUP + count)]
    if delivered != expected:
        raise SystemExit(f"delivered {len(delivered)} messages, not exactly the {len(expected)} sent in order")
    cpu_us = (used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime) * 1e6 / count
    print(f"{count} messages in {seconds:.2f} s, process CPU {cpu_us:.0f} us per message, all delivered in order")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("count", type=int, nargs="?", default=300, help="messages measured (after a warm-up)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root, ClusterProcess(Path(root), **CLUSTER_SETTINGS) as cluster:
        run_loop(stream(cluster.namesrv_addr, args.count))


if __name__ == "__main__":
    main()
