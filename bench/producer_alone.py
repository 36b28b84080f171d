"""A producer alone, one ``Producer.send`` awaited at a time, against a real broker in a child process
(``ClusterProcess``), with the latency stream's messages (100 B, one user property). Prints the process
CPU per send. The producer's side of ``bench/e2e_client.py`` without the consumer: what one send costs
the client, both of its steps (up to the write, and the answer made a ``SendResult``).

Instructions per send (docs/consume-path.md, "the producer's send, structurally smaller"): run it under
callgrind (the broker's child is not traced) with N and 2N sends and divide the difference by N::

    PYTHONHASHSEED=0 OPENBLAS_NUM_THREADS=1 ROCKETQ_NATIVE=required valgrind --tool=callgrind \\
      --callgrind-out-file=cg.300 .venv/bin/python bench/producer_alone.py 300

and split it with ``callgrind_annotate --inclusive=yes`` function by function (compiled functions keep
their C names).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from rocketq.bench.running import CLUSTER_SETTINGS, create_topic, run_loop
from rocketq.client import Message, Producer
from rocketq.client.admin import AdminClient
from rocketq.testing.cluster_process import ClusterProcess

TOPIC = "ProducerAloneTopic"
WARMUP = 200


async def sends(namesrv_addr: str, count: int) -> None:
    async with AdminClient(namesrv_addr) as admin:
        await create_topic(admin, TOPIC)
    async with Producer(group="producer-alone", namesrv_addr=namesrv_addr) as producer:

        async def one(number: int) -> None:
            body = b"%08d" % number + b"x" * 92
            await producer.send(Message(TOPIC, body, properties={"benchSentNs": str(time.perf_counter_ns())}))

        for number in range(WARMUP):
            await one(number)
        began, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
        for number in range(WARMUP, WARMUP + count):
            await one(number)
        seconds, used = time.perf_counter() - began, resource.getrusage(resource.RUSAGE_SELF)
    cpu_us = (used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime) * 1e6 / count
    print(f"{count} sends in {seconds:.2f} s, process CPU {cpu_us:.0f} us per send")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("count", type=int, nargs="?", default=300, help="sends measured (after a warm-up)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root, ClusterProcess(Path(root), **CLUSTER_SETTINGS) as cluster:
        run_loop(sends(cluster.namesrv_addr, args.count))


if __name__ == "__main__":
    main()
