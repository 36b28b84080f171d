"""What a broker can tell about its replication (for admin tools, metrics and tests)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, kw_only=True)
class SlaveState:
    """A slave as its master sees it."""

    address: str  # the slave's end of the HA connection
    acked_offset: int  # how far it acknowledged the CommitLog
    lag_bytes: int  # the master's CommitLog end minus ``acked_offset``


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicationState:
    """``role``: MASTER or SLAVE (no HA service: NONE). ``max_offset``: this broker's CommitLog end.
    A master: ``acked_offset`` the newest offset any slave acknowledged, ``slaves`` the connected ones.
    A slave: ``master_address`` the HA address it follows (None while it knows none), ``connected``
    whether it is connected, ``acked_offset`` its own CommitLog end (what it reported)."""

    role: str
    max_offset: int
    acked_offset: int
    slaves: list[SlaveState] = field(default_factory=list)
    master_address: str | None = None
    connected: bool = False
