"""The exactly-once sink's bookkeeping, without Spark or brokers: the transaction and part ids, what a
task attempt reports to the driver, what the driver commits on each broker, and which broker a task
sends each chunk of its rows to.

A micro-batch is one grouped transaction (``rocketq.client.transaction_group``) with the id
``<queryId>:<batchId>``: the query id lives in the checkpoint, so a micro-batch that Spark runs again
after a restart has the same id, and a broker that committed it already drops the replay. A batch write
(``df.write``) is one transaction, ``job-<jobId>``. Every task attempt writes one *part* of it,
``<partition>-<attempt>-<token>``: the random token keeps apart attempts that Spark numbers alike (a
stage run again, or the same micro-batch run again after a restart while the first run's half messages
still wait on a broker), since a part's count must match what its attempt sent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from pyspark.sql.datasource import WriterCommitMessage

from rocketq.client.message import MessageQueue

STREAM_SEPARATOR: Final = ":"
JOB_PREFIX: Final = "job-"


def stream_transaction(query_id: str, batch_id: int | str) -> str:
    """The transaction of micro-batch ``batch_id`` of query ``query_id``."""
    if not query_id or not str(batch_id).isdigit():
        raise ValueError(
            f"a streaming write needs its query and batch ids (the task's sql.streaming.queryId and"
            f" streaming.sql.batchId properties), not {query_id!r} and {batch_id!r}"
        )
    return f"{query_id}{STREAM_SEPARATOR}{int(batch_id)}"


def job_transaction(job_id: str) -> str:
    """The transaction of a batch write (``df.write``)."""
    return f"{JOB_PREFIX}{job_id}"


def batch_of(transaction: str) -> int | None:
    """The micro-batch id a stream's transaction id names (None for a batch write's)."""
    _, separator, batch = transaction.rpartition(STREAM_SEPARATOR)
    return int(batch) if separator and batch.isdigit() else None


def part_id(partition: int, attempt: int, token: str) -> str:
    """The part one task attempt writes."""
    return f"{partition}-{attempt}-{token}"


@dataclass
class Prepared(WriterCommitMessage):
    """A task attempt's report: its ``rows`` rows are the half messages of ``part`` of ``transaction``,
    ``held[broker]`` of them on each broker, every send acknowledged."""

    transaction: str
    partition: int
    attempt: int
    part: str
    rows: int
    held: dict[str, int] = field(default_factory=dict)


class CommitMessageError(ValueError):
    """The driver got commit messages it cannot commit together (another transaction, another sink)."""


@dataclass(frozen=True, slots=True)
class CommitPlan:
    """What the driver ends: ``parts[broker][part]`` = the messages that part must hold on that broker.
    ``transaction`` is None when no task reported (then nothing is known to end). ``superseded``: parts of
    a partition that another reported attempt stands for; not listed, so the commit rolls them back."""

    transaction: str | None
    parts: dict[str, dict[str, int]]
    rows: int
    superseded: tuple[str, ...] = ()

    @property
    def brokers(self) -> list[str]:
        return sorted(self.parts)


def commit_plan(messages: Sequence[WriterCommitMessage | None], transaction: str | None = None) -> CommitPlan:
    """The plan of the task reports ``messages`` (a failed task's slot is None), whose transaction must be
    ``transaction`` when given. One attempt per partition is committed: the first reported (lowest
    attempt), should Spark ever report two (each wrote the partition's rows whole)."""
    reports: list[Prepared] = []
    for message in messages:
        if message is None:
            continue
        if not isinstance(message, Prepared):
            raise CommitMessageError(
                f"a task reported {type(message).__name__}, not an exactly-once write: was the query restarted"
                " with another deliveryGuarantee while a micro-batch was unfinished?"
            )
        reports.append(message)
    ids = {report.transaction for report in reports} | ({transaction} if transaction is not None else set())
    if len(ids) > 1:
        raise CommitMessageError(f"the tasks wrote different transactions: {sorted(ids)}")
    chosen: dict[int, Prepared] = {}
    superseded: list[str] = []
    for report in sorted(reports, key=lambda r: (r.partition, r.attempt, r.part)):
        if report.partition in chosen:
            superseded.append(report.part)
        else:
            chosen[report.partition] = report
    parts: dict[str, dict[str, int]] = {}
    for report in chosen.values():
        for broker, count in report.held.items():
            if count > 0:
                parts.setdefault(broker, {})[report.part] = count
    return CommitPlan(
        transaction=next(iter(ids)) if ids else None,
        parts=parts,
        rows=sum(report.rows for report in chosen.values()),
        superseded=tuple(superseded),
    )


def _hash(data: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def chunk_key(partition: int, first_seq: int, chunk: int) -> str:
    """What places a chunk of a task's rows: the partition, the sequence number of the first row of the
    Arrow batch it comes from, and the chunk's index in that batch. The same rows in the same order give
    the same keys when Spark runs the batch again."""
    return f"{partition}/{first_seq}/{chunk}"


class QueueChooser:
    """Where the chunks of rows that name no queue go, among ``queues`` (one topic's writable queues).

    The broker is chosen by rendezvous hashing of the chunk's key over the brokers' names: the same key
    goes to the same broker in every run and every process, a broker leaving the route moves only the
    chunks it had, and queues added to a broker move none across brokers (the commit is per broker, so
    that is what must not change when a micro-batch runs again). The queue within the broker follows
    from the key too.
    """

    def __init__(self, queues: Sequence[MessageQueue]) -> None:
        by_broker: dict[str, list[MessageQueue]] = {}
        for queue in queues:
            by_broker.setdefault(queue.broker_name, []).append(queue)
        if not by_broker:
            raise ValueError("no queue to send to")
        self._brokers = [
            (name.encode() + b"\0", sorted(members, key=lambda q: q.queue_id))
            for name, members in sorted(by_broker.items())
        ]

    def choose(self, key: str) -> MessageQueue:
        data = key.encode()
        best_score, best_queues = -1, self._brokers[0][1]
        for prefix, queues in self._brokers:
            score = _hash(prefix + data)
            if score > best_score:
                best_score, best_queues = score, queues
        return best_queues[_hash(data) % len(best_queues)]


__all__ = [
    "CommitMessageError",
    "CommitPlan",
    "Prepared",
    "QueueChooser",
    "batch_of",
    "chunk_key",
    "commit_plan",
    "job_transaction",
    "part_id",
    "stream_transaction",
]
