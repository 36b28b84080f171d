"""How the kernel schedules the client and the server of a paced end-to-end latency stream, rocketq's
(``rocketq bench consumer --only e2e_latency``) or Redis's (``peer_latency.py redis``), from the
scheduler's own events.

Not part of rocketq and not installed with it: it needs Linux's ``perf`` (root, or
``kernel.perf_event_paranoid`` low enough). ``perf record -a -e sched:sched_wakeup,sched:sched_switch`` runs
for ``--trace-seconds`` in the middle of the stream: two tracepoints, so unlike ``perf trace`` (a few µs
per system call, see ``e2e_chain.py``) it hardly slows the processes it watches. For the client process's
main thread (producer and consumer share its event loop) and the server's, it prints one JSON object each:

- ``wakeups``: how often the thread was woken from sleep, the share woken by the other process, the
  share placed on the waker's own CPU (a "sync" wake-up: on loopback TCP, writing to a socket wakes its
  reader this way), and the time from each wake-up to the thread running (``wake_to_run_us``);
- ``preempted``: how often the thread was switched out while it could still run, the share of those
  where the other process took its CPU, and how long it then waited to run again (``waited_us``): while
  it waits, it reads nothing, whatever the other side has written.

Usage (``sudo`` where not root; the peers' virtualenv for Redis, as for ``peer_latency.py``)::

    python bench/peers/e2e_sched.py --system rocketq --rocketq .venv/bin/rocketq
    python bench/peers/e2e_sched.py --system redis --python /tmp/peers/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from e2e_chain import child_of  # (bench/peers, beside this script)

EVENT = re.compile(
    r"^\s*(?P<comm>.+?)\s+(?P<tid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<time>[\d.]+):\s+sched:(?P<name>\w+):\s+(?P<args>.*)$"
)
WAKEUP = re.compile(r"pid=(\d+) .*target_cpu=(\d+)")
SWITCH = re.compile(r"prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=.* next_pid=(\d+)")


@dataclass
class Thread:
    """What the scheduler did to one thread over the trace."""

    woken: list[tuple[float, int, bool]] = field(default_factory=list)  # (wait to run µs, waker tid, on waker's CPU)
    preempted: list[tuple[float, int]] = field(default_factory=list)  # (wait to run µs, tid that took the CPU)


def schedule(events: list[str], threads: tuple[int, int]) -> dict[int, Thread]:
    """The wake-ups and preemptions of ``threads`` in ``perf script`` lines of the two events."""
    found = {tid: Thread() for tid in threads}
    woken_at: dict[int, tuple[float, int, bool]] = {}
    preempted_at: dict[int, tuple[float, int]] = {}
    for line in events:
        match = EVENT.match(line)
        if match is None:
            continue
        at_us, cpu = float(match["time"]) * 1e6, int(match["cpu"])
        if match["name"] == "sched_wakeup":
            wakeup = WAKEUP.search(match["args"])
            if wakeup is not None and int(wakeup[1]) in found:
                woken_at[int(wakeup[1])] = (at_us, int(match["tid"]), int(wakeup[2]) == cpu)
        elif match["name"] == "sched_switch":
            switch = SWITCH.search(match["args"])
            if switch is None:
                continue
            previous, state, following = int(switch[1]), switch[2], int(switch[3])
            if previous in found and state.startswith("R"):  # switched out while runnable
                preempted_at[previous] = (at_us, following)
            if following in woken_at:
                since, waker, same_cpu = woken_at.pop(following)
                found[following].woken.append((at_us - since, waker, same_cpu))
            elif following in preempted_at:
                since, taker = preempted_at.pop(following)
                found[following].preempted.append((at_us - since, taker))
    return found


def summary(name: str, thread: Thread, other: int, seconds: float) -> dict[str, object]:
    """One JSON-ready line for ``thread`` (``other``: the other process's main thread)."""
    line: dict[str, object] = {"thread": name}
    if thread.woken:
        waits = [wait for wait, _, _ in thread.woken]
        line["wakeups_per_s"] = round(len(waits) / seconds)
        line["woken_by_other"] = round(sum(waker == other for _, waker, _ in thread.woken) / len(waits), 2)
        line["on_wakers_cpu"] = round(sum(same for _, _, same in thread.woken) / len(waits), 2)
        line["wake_to_run_us"] = quartiles(waits)
    if thread.preempted:
        waits = [wait for wait, _ in thread.preempted]
        line["preempted_per_s"] = round(len(waits) / seconds)
        line["preempted_by_other"] = round(sum(taker == other for _, taker in thread.preempted) / len(waits), 2)
        line["waited_us"] = quartiles(waits)
    return line


def quartiles(values: list[float]) -> dict[str, int]:
    if len(values) < 4:
        return {"p50": round(statistics.median(values))}
    p25, p50, p75 = statistics.quantiles(values, n=4)
    return {"p25": round(p25), "p50": round(p50), "p75": round(p75)}


def main(options: argparse.Namespace) -> None:
    seconds = options.warmup_seconds + options.trace_seconds + 2
    if options.system == "rocketq":
        command = [
            options.rocketq, "bench", "consumer", "--only", "e2e_latency", "--rate", "1000",
            "--latency-seconds", str(seconds), "--size", "100", "--listener", options.listener, "--json",
        ]  # fmt: skip
        environment = dict(os.environ)
    else:
        command = [options.python, str(Path(__file__).with_name("peer_latency.py")), "redis", "--seconds", str(seconds)]
        source = str(Path(__file__).resolve().parents[2] / "src")  # rocketq.bench.pacing, standard library only
        environment = {**os.environ, "PYTHONPATH": source}
    with tempfile.TemporaryDirectory(prefix="e2e-sched-") as scratch:
        recorded = Path(scratch) / "sched.data"
        client = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environment
        )
        try:
            server = child_of(client.pid, 30)
            time.sleep(options.warmup_seconds)
            subprocess.run(
                [options.perf, "record", "-a", "-q", "-e", "sched:sched_wakeup,sched:sched_switch", "-o", str(recorded),
                 "--", "sleep", str(options.trace_seconds)],
                check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            events = subprocess.run(
                [options.perf, "script", "-i", str(recorded), "-F", "comm,tid,cpu,time,event,trace"],
                check=False, capture_output=True, text=True,
            ).stdout.splitlines()  # fmt: skip
            output, _ = client.communicate(timeout=120)
        finally:
            if client.poll() is None:
                client.kill()
    if not events:
        sys.exit(f"perf recorded no scheduler events (is {options.perf} usable here? root or perf_event_paranoid)")
    found = schedule(events, (client.pid, server))
    print(json.dumps({"system": options.system, **summary("client", found[client.pid], server, options.trace_seconds)}))
    print(json.dumps({"system": options.system, **summary("server", found[server], client.pid, options.trace_seconds)}))
    for line in output.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            if row.get("name") in ("e2e_latency", "redis"):
                print(json.dumps({"system": options.system, "p50_us": row.get("p50_us"), "p99_us": row.get("p99_us")}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", choices=["rocketq", "redis"], default="rocketq")
    parser.add_argument("--rocketq", default=".venv/bin/rocketq", help="the rocketq command to measure")
    parser.add_argument("--python", default=sys.executable, help="the peers' Python (redis, hiredis, uvloop)")
    parser.add_argument("--perf", default="perf")
    parser.add_argument("--listener", choices=["async", "sync"], default="async")
    parser.add_argument("--warmup-seconds", type=float, default=6.0, help="from the start to the trace")
    parser.add_argument("--trace-seconds", type=float, default=2.0)
    main(parser.parse_args())
