"""What failover keeps in etcd, and the pure decisions made from it (docs/failover.md#the-rules).

Under ``<failoverEtcdPrefix>/<cluster>/<brokerName>/``:

- ``master``: the group's master (``MasterRecord``, JSON), bound to the master's lease: it disappears
  when the master stops renewing it.
- ``epoch``: the newest epoch handed out (decimal text, no lease). A broker becomes master by one
  transaction that finds ``master`` absent and ``epoch`` unchanged since it read it, and writes both.
- ``replicas/<brokerId>``: each live broker's report (``ReplicaReport``), bound to its own lease.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import msgspec


class MasterRecord(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    broker_id: int  # the master's own brokerId (the one it registers as a slave)
    epoch: int
    address: str  # its broker ``ip:port``
    ha_address: str = ""  # its HA ``ip:port`` ("" for the moment between winning and listening)

    def encode(self) -> bytes:
        return msgspec.json.encode(self)

    @classmethod
    def decode(cls, data: bytes) -> MasterRecord:
        return msgspec.json.decode(data, type=cls)


class ReplicaReport(msgspec.Struct, rename="camel", kw_only=True, frozen=True):
    broker_id: int
    epoch: int  # the last epoch its log holds
    max_offset: int  # where its CommitLog ends
    address: str

    def encode(self) -> bytes:
        return msgspec.json.encode(self)

    @classmethod
    def decode(cls, data: bytes) -> ReplicaReport:
        return msgspec.json.decode(data, type=cls)


@dataclass(frozen=True, slots=True)
class GroupKeys:
    """The etcd keys of one broker group."""

    prefix: bytes

    @classmethod
    def of(cls, root: str, cluster: str, broker_name: str) -> GroupKeys:
        return cls(f"{root.rstrip('/')}/{cluster}/{broker_name}/".encode())

    @property
    def master(self) -> bytes:
        return self.prefix + b"master"

    @property
    def epoch(self) -> bytes:
        return self.prefix + b"epoch"

    @property
    def replicas(self) -> bytes:
        return self.prefix + b"replicas/"

    def replica(self, broker_id: int) -> bytes:
        return self.replicas + str(broker_id).encode()


def most_advanced(reports: Iterable[ReplicaReport]) -> ReplicaReport | None:
    """The broker that should become master: the newest epoch in its log, then the longest log, then
    the lowest brokerId. Slaves of one master hold prefixes of one log, so the longest has every
    message any of them acknowledged; a former master that came back holds an older epoch and loses
    to them whatever its length (its tail is the part no slave got)."""
    return min(reports, key=lambda report: (-report.epoch, -report.max_offset, report.broker_id), default=None)


@dataclass(slots=True)
class LeaseDeadline:
    """Until when a master may take writes: etcd renewed its lease at the latest at the moment the
    renewal was sent, so the lease lasts at least ``ttl`` from then (by this broker's clock); writes stop
    ``margin_s`` before, so they stop before etcd lets another broker win the group."""

    margin_s: float
    until: float = 0.0

    def renewed(self, sent_at: float, ttl_s: int) -> None:
        self.until = max(self.until, sent_at + ttl_s - self.margin_s) if ttl_s > 0 else 0.0

    def lost(self) -> None:
        self.until = 0.0

    def holds(self, now: float) -> bool:
        return now < self.until
