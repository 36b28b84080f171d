"""What a broker can tell about its replication (for admin tools, metrics and tests), and the
bytes-per-second counter behind the transfer rates it reports."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, kw_only=True)
class SlaveState:
    """A slave as its master sees it."""

    address: str  # the slave's end of the HA connection
    acked_offset: int  # how far it acknowledged the CommitLog
    lag_bytes: int  # the master's CommitLog end minus ``acked_offset``
    in_sync: bool = False  # connected and less than haSlaveFallbehindMax behind (may ack SYNC_MASTER sends)
    transfer_from: int = 0  # where the master started streaming to it on this connection
    transferred_per_s: int = 0  # CommitLog bytes sent to it in the last whole second


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicationState:
    """``role``: MASTER or SLAVE (no HA service: NONE). ``max_offset``: this broker's CommitLog end.
    A master: ``acked_offset`` the newest offset any slave acknowledged, ``slaves`` the connected ones.
    A slave: ``master_address`` the HA address it follows (None while it knows none), ``connected``
    whether it is connected, ``acked_offset`` its own CommitLog end (what it reported),
    ``transferred_per_s`` the master's bytes it took in the last whole second, ``last_read_ms`` and
    ``last_write_ms`` when it last heard from its master and last reported (epoch ms, 0: never)."""

    role: str
    max_offset: int
    acked_offset: int
    slaves: list[SlaveState] = field(default_factory=list)
    master_address: str | None = None
    connected: bool = False
    transferred_per_s: int = 0
    last_read_ms: int = 0
    last_write_ms: int = 0


class ByteRate:
    """Bytes counted per whole second of ``clock`` (epoch seconds): ``per_second()`` is the count of
    the last complete second (0 when nothing moved in it)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._second = int(clock())
        self._current = 0
        self._previous = 0

    def add(self, count: int) -> None:
        self._roll()
        self._current += count

    def per_second(self) -> int:
        self._roll()
        return self._previous

    def _roll(self) -> None:
        second = int(self._clock())
        if second != self._second:
            self._previous = self._current if second == self._second + 1 else 0
            self._current = 0
            self._second = second
