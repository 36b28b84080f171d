"""What one scrape of ``/metrics`` costs a broker, and what an idle exporter costs, from the broker's CPU clock.

Starts the ``rocketq bench metrics`` pair (``started_pair``: a broker with metrics on and one without, in
child processes), writes ``--backlog`` messages to the metrics broker's drain topic and drains them with
``--groups`` consumer groups (so the scrape has lag, traffic and latency series to report), then, three
times: both brokers' CPU over 5 idle seconds (the metrics one minus the other: the idle exporter), and
the metrics broker's CPU over ``--scrapes`` scrapes in a row minus its idle CPU, per scrape. Run it
with ``ROCKETQ_NATIVE=required`` for the compiled message path.

    ROCKETQ_NATIVE=required .venv/bin/python bench/metrics_scrape.py
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import urllib.request
from pathlib import Path

from rocketq.bench.consumer import ConsumerBench
from rocketq.bench.consumer_options import ConsumerBenchOptions
from rocketq.bench.metrics import DRAIN_TOPIC, METRICS_ON, broker_cpu_s, prepare_topics
from rocketq.bench.running import run_loop, started_pair

IDLE_S = 5.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backlog", type=int, default=100_000)
    parser.add_argument("--groups", type=int, default=4)
    parser.add_argument("--scrapes", type=int, default=40)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="metrics-scrape") as root,
        started_pair(Path(root), METRICS_ON, True, 1) as (off, on, _),
    ):
        run_loop(prepare_topics(on.namesrv_addr, 100, args.backlog))
        for group in range(args.groups):
            bench = ConsumerBench(ConsumerBenchOptions(backlog=args.backlog, members=(1,)), lambda _: None)
            bench.namesrv_addr = on.namesrv_addr
            run_loop(bench.drain(DRAIN_TOPIC, 100, 1, 100.0, group=f"metrics-scrape-{group}"))
        url = f"http://127.0.0.1:{on.metrics_port}/metrics"
        for _ in range(3):
            off_before, on_before = broker_cpu_s(off.pid), broker_cpu_s(on.pid)
            time.sleep(IDLE_S)
            idle_off = (broker_cpu_s(off.pid) - off_before) / IDLE_S
            idle_on = (broker_cpu_s(on.pid) - on_before) / IDLE_S
            before, began = broker_cpu_s(on.pid), time.perf_counter()
            for _ in range(args.scrapes):
                with urllib.request.urlopen(url, timeout=30) as response:
                    size = len(response.read())
            seconds, cpu_s = time.perf_counter() - began, broker_cpu_s(on.pid) - before
            result = {
                "idle_ms_per_s_off": round(idle_off * 1000, 2),
                "idle_ms_per_s_on": round(idle_on * 1000, 2),
                "scrape_cpu_ms": round((cpu_s - idle_on * seconds) / args.scrapes * 1000, 2),
                "scrape_wall_ms": round(seconds / args.scrapes * 1000, 2),
                "bytes": size,
            }
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
