"""What ``rocketq bench consumer`` measures (its options) and the bench's fixed settings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rocketq.bench.running import CLUSTER_NAME

PRODUCE_BATCH = 256
PRODUCE_BATCH_BYTES = 2 * 1024 * 1024
PRODUCE_IN_FLIGHT = 4
WARMUP_MESSAGES = 100
STALL_TIMEOUT_S = 60.0
REBALANCE_TIMEOUT_S = 60.0
POLL_S = 0.0005
DRAINS = ("push_drain", "pull_drain")

NOTES = (
    "NameServer and broker (256 MiB CommitLog files, ASYNC_FLUSH) run in a child process (--broker process)",
    "or in this event loop (--broker inline); producers and every consumer member share this process's",
    "event loop (uvloop) and GIL. Backlogs are written through the network with Producer.send_batch.",
    "Sync listeners run in the PushConsumer's thread pool, as usual.",
    "MB = 10^6 bytes of stored records (CommitLog record bytes). Latency columns: see each row.",
)


class BenchError(RuntimeError):
    """A consumer benchmark step did not complete (stalled, lost messages, no rebalance)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerBenchOptions:
    """What ``rocketq bench consumer`` measures.

    Attributes:
        sizes: Message body sizes in bytes; every measurement is taken for each.
        backlog: Messages in the backlog each drain run consumes.
        members: Consumer member counts of the drain runs (a new group for each).
        rate: Messages per second of the latency and rebalance streams.
        latency_seconds: How long the latency stream runs.
        listener: ``"sync"`` (a plain function, run in the consumer's thread pool) or ``"async"``
            (a coroutine function, run on the event loop).
        pull_batch: The consumers' ``pull_batch_size`` (messages per pull request; RocketMQ's default 32).
        broker: ``"process"`` (NameServer and broker in a child process, the bench's clients in this
            one) or ``"inline"`` (everything in this process and event loop).
        directory: Parent of the scratch directory; None for the system temp dir.
        namesrv_addr: An external cluster's NameServer; None starts a cluster for the run.
        cluster: The cluster whose masters get the bench's topics.
        only: The measurements to take (``push_drain``, ``pull_drain``, ``e2e_latency``, ``loopback_echo``,
            ``rebalance_join``); empty for all.
    """

    sizes: tuple[int, ...] = (100, 1024)
    backlog: int = 1_000_000
    members: tuple[int, ...] = (1, 2)
    rate: int = 1000
    latency_seconds: float = 10.0
    listener: str = "sync"
    pull_batch: int = 32
    broker: str = "process"
    directory: Path | None = None
    namesrv_addr: str | None = None
    cluster: str = CLUSTER_NAME
    only: tuple[str, ...] = ()

    def takes(self, measurement: str) -> bool:
        return not self.only or measurement in self.only
