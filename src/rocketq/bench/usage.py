"""What the bench process and the broker child have used: CPU time, and how many times their threads
were put on a CPU (Linux ``/proc/<pid>/task/<tid>/schedstat``); and the share of the machine's CPU time
the hypervisor gave to others (``steal`` in ``/proc/stat``).

The second count is mostly wake-ups: a thread that sleeps in ``epoll_wait`` or on a lock and is woken
runs once more. Per message, the two tell apart a change in how often a process is woken from a
change in the work it does each time, which CPU per message alone does not.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from rocketq.bench import Extra


def thread_totals(pid: int) -> tuple[int, int]:
    """(CPU ns, times put on a CPU) summed over the live threads of ``pid``; (0, 0) where Linux's
    schedstat is missing. Threads that ended are no longer counted."""
    cpu_ns = runs = 0
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError, ValueError, IndexError):  # a thread may end meanwhile
            fields = (task / "schedstat").read_text().split()
            cpu_ns += int(fields[0])
            runs += int(fields[2])
    return cpu_ns, runs


def process_cpu_ns(pid: int) -> int:
    """CPU nanoseconds process ``pid`` has used, every thread included, those that ended too (Linux's
    CPU-time clock of another process, ``clock_getcpuclockid``); where that clock cannot be read, the
    live threads' ``thread_totals``."""
    clock = (~pid << 3) | 2  # CPUCLOCK_SCHED of process pid: how clock_getcpuclockid makes its id
    try:
        return time.clock_gettime_ns(clock)
    except (OSError, AttributeError, OverflowError):
        return thread_totals(pid)[0]


def cpu_times() -> tuple[int, int]:
    """(steal, total) clock ticks of all CPUs since boot, from the first line of ``/proc/stat``; (0, 0)
    where it cannot be read. Steal is time a virtual CPU wanted to run and the host ran something else:
    on a shared VM it is what makes one minute's run slower than the next."""
    try:
        with open("/proc/stat") as stat:
            ticks = [int(field) for field in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    # user nice system idle iowait irq softirq steal guest guest_nice; guest time is inside user already
    return (ticks[7] if len(ticks) > 7 else 0), sum(ticks[:8])


@dataclass(frozen=True, slots=True)
class Usage:
    cpu_s: float  # the bench process, every thread (ended ones too)
    runs: int  # the bench process's live threads
    broker_cpu_s: float  # 0 without a broker child
    broker_runs: int
    steal_ticks: int  # the whole machine's (``cpu_times``)
    total_ticks: int

    @classmethod
    def now(cls, broker_pid: int | None) -> Usage:
        _, runs = thread_totals(os.getpid())
        broker_cpu_ns, broker_runs = thread_totals(broker_pid) if broker_pid is not None else (0, 0)
        steal, total = cpu_times()
        return cls(time.process_time(), runs, broker_cpu_ns / 1e9, broker_runs, steal, total)

    def since(self, before: Usage, seconds: float, messages: int) -> Extra:
        """The usage between ``before`` and this snapshot, per message (and the bench's share of a core)."""
        cpu_s = self.cpu_s - before.cpu_s
        extra: Extra = {
            "cpu_util": cpu_s / seconds,
            "cpu_us_per_msg": cpu_s / messages * 1e6,
            "runs_per_msg": (self.runs - before.runs) / messages,
        }
        if self.broker_runs:
            extra["broker_cpu_us_per_msg"] = (self.broker_cpu_s - before.broker_cpu_s) / messages * 1e6
            extra["broker_runs_per_msg"] = (self.broker_runs - before.broker_runs) / messages
        if self.total_ticks > before.total_ticks:
            extra["host_steal"] = (self.steal_ticks - before.steal_ticks) / (self.total_ticks - before.total_ticks)
        return extra
