"""Where one message of ``rocketq bench consumer --only e2e_latency`` spends its time, step by step, from
the system calls of the two processes (the bench's producer and consumer, and the broker's child).

Not part of rocketq and not installed with it: it needs Linux's ``perf`` (``perf trace``, run as root or
with ``kernel.perf_event_paranoid`` low enough). Nothing is added to rocketq's code: ``perf trace`` is
attached, for ``--trace-seconds`` in the middle of the measured stream, to both processes of the compiled
(or plain) build being measured, and stamps their ``read``/``write``/``writev``/``epoll_pwait`` calls on one
clock. The bench is run with ``ROCKETQ_BENCH_STAMP_MARKS=1``, so its two latency stamps show up in the
trace too (``getppid`` at the send's, ``getuid`` at the listener's; ``rocketq.bench.recorder``). Each
message's chain is then followed through them:

- ``stamp -> send_written``: ``Producer.send`` from the stamp to the end of its request's ``writev``;
- ``send_written -> broker_read``: the producer's request written (end of its ``writev``) until the broker
  reads it: the broker's wake-up, and whatever the bench process still does before it lets go of the core;
- ``broker_read -> pull_answer_written``: the broker's work on the send request up to the held pull's
  answer leaving (frame decode, send handler, put, dispatch, long polling, the pull answer read and
  encoded: everything between the two system calls);
- ``pull_answer_written -> consumer_read``: the consumer's wake-up;
- ``consumer_read -> consumer_next_call``: the consumer's work on the answer up to its next system call
  (which may come before the listener's stamp: another read in the same turn, a corked write);
- ``pull_answer -> send_answer_written``: how long after the pull's answer the producer's own answer
  leaves the broker (the send handler's remaining work, and the consumer's turn when both share a core);
- ``consumer_read -> listener_stamp``: the consumer's answer read until the listener's stamp;
- ``send_written -> consumer_read``: the chain between the two processes' system calls;
- ``stamp -> listener_stamp``: the whole chain, as the bench measures it (in the traced window).

Usage (``sudo`` where not root)::

    python bench/peers/e2e_chain.py --rocketq .venv/bin/rocketq --listener async

One JSON object per step (``p25_us``, ``p50_us``, ``p75_us``, ``messages``) is printed, then the bench's
own ``e2e_latency`` row (its latencies cover the whole stream, traced or not). ``perf trace`` costs each
traced system call a few microseconds and takes CPU of its own, so the traced window runs slower than the
untraced stream: compare steps within a trace, and traces with each other, not with the untraced p50.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

CALLS = "read,write,writev,epoll_pwait,epoll_wait,getppid,getuid"
MARKS = {"ROCKETQ_BENCH_STAMP_MARKS": "1"}  # the bench's stamps as system calls (rocketq.bench.recorder)
LINE = re.compile(r"^\s*([\d.]+) \(\s*([\d.]*)\s*(?:ms)?\): \S+/(\d+)\s+(\w+)\((?:fd: (\d+))?.*\) += ?(\d*)")
STEPS = (
    "stamp -> send_written",
    "send_written -> broker_read",
    "broker_read -> pull_answer_written",
    "pull_answer_written -> consumer_read",
    "consumer_read -> consumer_next_call",
    "pull_answer -> send_answer_written",
    "consumer_read -> listener_stamp",
    "send_written -> consumer_read",
    "stamp -> listener_stamp",
)


@dataclass(frozen=True, order=True)
class Call:
    start_us: float
    duration_us: float
    pid: int
    name: str
    fd: int
    result: int

    @property
    def end_us(self) -> float:
        return self.start_us + self.duration_us


def parse(path: Path) -> list[Call]:
    """The finished system calls of a ``perf trace`` output file (calls split by a sleep are skipped:
    only their ``epoll_pwait`` ones are, which no step starts or ends at)."""
    calls = []
    for line in path.read_text(errors="replace").splitlines():
        if "continued" in line:
            continue
        match = LINE.match(line)
        if match:
            start, duration, pid, name, fd, result = match.groups()
            calls.append(
                Call(float(start) * 1000, float(duration or 0) * 1000, int(pid), name, int(fd or -1), int(result or 0))
            )
    calls.sort()
    return calls


def most_common(calls: list[Call], pid: int, names: tuple[str, ...]) -> tuple[int, int]:
    """(fd, bytes) of the most frequent (fd, bytes) among ``pid``'s calls named ``names``."""
    counts = Counter((call.fd, call.result) for call in calls if call.pid == pid and call.name in names)
    return counts.most_common(1)[0][0]


def chains(calls: list[Call], bench: int, broker: int) -> dict[str, list[float]]:
    """Each step's durations over the traced messages (see the module)."""
    writes = ("write", "writev")
    send_fd, send_bytes = most_common(calls, bench, ("writev",))  # a send request: header and body parts
    reads = Counter(call.result for call in calls if call.pid == bench and call.name == "read" and call.fd != send_fd)
    answer_bytes = reads.most_common(1)[0][0]  # a pull's answer (the producer's answers come on send_fd)
    starts = [call.start_us for call in calls]

    def after(
        time_us: float, pid: int, names: tuple[str, ...], size: int | None = None, fd: int | None = None
    ) -> Call | None:
        for call in calls[bisect.bisect_left(starts, time_us) :]:
            if (
                call.pid == pid
                and call.name in names
                and (size is None or call.result == size)
                and (fd is None or call.fd == fd)
            ):
                return call
        return None

    def before(time_us: float, pid: int, name: str) -> Call | None:
        for call in reversed(calls[: bisect.bisect_left(starts, time_us)]):
            if call.pid == pid and call.name == name:
                return call
        return None

    steps: dict[str, list[float]] = {step: [] for step in STEPS}
    for send in calls:
        if send.pid != bench or send.name != "writev" or send.fd != send_fd or send.result != send_bytes:
            continue
        read = after(send.start_us, broker, ("read",), size=send_bytes)
        answer = read and after(read.end_us, broker, writes, size=answer_bytes)
        consumed = answer and after(answer.start_us, bench, ("read",), size=answer_bytes)
        if read is None or answer is None or consumed is None or consumed.start_us - send.end_us > 50_000:
            continue
        following = after(consumed.end_us + 0.001, bench, (*writes, "read", "epoll_pwait", "epoll_wait"))
        send_answer = after(answer.end_us + 0.001, broker, writes, fd=read.fd)
        stamped = before(send.start_us, bench, "getppid")
        listened = after(consumed.end_us, bench, ("getuid",))
        found = {
            "send_written -> broker_read": read.end_us - send.end_us,
            "broker_read -> pull_answer_written": answer.start_us - read.end_us,
            "pull_answer_written -> consumer_read": consumed.end_us - answer.end_us,
            "send_written -> consumer_read": consumed.end_us - send.end_us,
        }
        if following is not None:
            found["consumer_read -> consumer_next_call"] = following.start_us - consumed.end_us
        if send_answer is not None:
            found["pull_answer -> send_answer_written"] = send_answer.start_us - answer.start_us
        if stamped is not None and send.start_us - stamped.start_us < 5_000:
            found["stamp -> send_written"] = send.end_us - stamped.start_us
        if listened is not None and listened.start_us - consumed.end_us < 5_000:
            found["consumer_read -> listener_stamp"] = listened.start_us - consumed.end_us
            if stamped is not None and send.start_us - stamped.start_us < 5_000:
                found["stamp -> listener_stamp"] = listened.start_us - stamped.start_us
        for step, duration in found.items():
            steps[step].append(duration)
    return steps


def child_of(pid: int, timeout_s: float) -> int:
    """The first child process of ``pid`` (the bench's broker), waiting for it to appear."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        children = Path(f"/proc/{pid}/task/{pid}/children")
        found = children.read_text().split() if children.exists() else []
        if found:
            return int(found[0])
        time.sleep(0.05)
    raise RuntimeError(f"process {pid} started no broker child within {timeout_s:.0f} s")


def main(options: argparse.Namespace) -> None:
    seconds = options.warmup_seconds + options.trace_seconds + 2
    command = [
        options.rocketq, "bench", "consumer", "--only", "e2e_latency", "--rate", "1000",
        "--latency-seconds", str(seconds), "--size", str(options.size), "--listener", options.listener, "--json",
    ]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="e2e-chain-") as scratch:
        trace = Path(scratch) / "trace.txt"
        environment = {**os.environ, **MARKS}
        bench = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environment)
        try:
            broker = child_of(bench.pid, 30)
            time.sleep(options.warmup_seconds)  # the cluster's start, the assignment and the warm-up
            subprocess.run(
                ["timeout", "-s", "INT", str(options.trace_seconds), options.perf, "trace",
                 "-p", f"{bench.pid},{broker}", "-e", CALLS, "-o", str(trace)],
                check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            output, _ = bench.communicate(timeout=120)
        finally:
            if bench.poll() is None:
                bench.kill()
        calls = parse(trace)
        if options.keep_trace:
            Path(options.keep_trace).write_text(trace.read_text(errors="replace"))
    if not calls:
        sys.exit(f"perf trace recorded nothing (is {options.perf} usable here? root or perf_event_paranoid)")
    for step, durations in chains(calls, bench.pid, broker).items():
        if len(durations) < 4:
            print(json.dumps({"step": step, "messages": len(durations)}))
            continue
        p25, p50, p75 = statistics.quantiles(durations, n=4)
        figures = {"p25_us": round(p25), "p50_us": round(p50), "p75_us": round(p75), "messages": len(durations)}
        print(json.dumps({"step": step, **figures}))
    for line in output.splitlines():
        if line.startswith("{") and '"e2e_latency"' in line:
            row = json.loads(line)
            keys = ("p50_us", "p99_us", "send_rate", "cpu_us_per_msg", "broker_cpu_us_per_msg", "listener")
            print(json.dumps({"bench": "e2e_latency", **{key: row.get(key) for key in keys}}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rocketq", default=".venv/bin/rocketq", help="the rocketq command to measure")
    parser.add_argument("--perf", default="perf")
    parser.add_argument("--listener", choices=["async", "sync"], default="async")
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--warmup-seconds", type=float, default=6.0, help="from the bench's start to the trace")
    parser.add_argument("--trace-seconds", type=float, default=2.0)
    parser.add_argument("--keep-trace", help="also write perf trace's output to this file")
    main(parser.parse_args())
