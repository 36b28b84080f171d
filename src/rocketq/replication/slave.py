"""The slave's HA client (RocketMQ's HAClient): it connects to its master's HA port, reports how far its
CommitLog reaches (at once, after every write, and every ``heartbeat_interval_s``), and appends the
master's CommitLog frames at the same offsets (``MessageStore.append_replica``, which dispatches them
as any put: the slave's ConsumeQueues, index and message ids come out as the master's).

Before each connection it asks the master's broker port for its epochs (``fetch_epochs``, when the
broker gives it one and knows that address) and cuts its own log back where the two part
(``rocketq.replication.epochs.reconcile``): a former master's writes no slave got are removed before
the new master's bytes are appended at their offsets.

A frame that does not start where the slave's log ends drops the connection (the next one resumes
from the slave's report); so does a master silent for ``housekeeping_interval_s``. The master's
address comes from ``haMasterAddress`` or from the NameServer's answer to the slave's registration
(``set_master``). Runs on the broker's event loop; ``clock`` paces reports and reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from rocketq.remoting import RemotingError
from rocketq.remoting.clock import SYSTEM_CLOCK, Clock, wanted_or_slept
from rocketq.replication import frames
from rocketq.replication.epochs import EpochAnswer, reconcile
from rocketq.replication.state import ByteRate, ReplicationState
from rocketq.store import MessageStore

log = logging.getLogger(__name__)

READ_SIZE = 256 * 1024
CONNECT_TIMEOUT_S = 3.0


@dataclass(frozen=True, slots=True, kw_only=True)
class SlaveSettings:
    heartbeat_interval_s: float = 5.0  # haSendHeartbeatInterval: report at least this often
    housekeeping_interval_s: float = 20.0  # haHousekeepingInterval: a master silent this long is left
    reconnect_interval_s: float = 1.0  # wait after a failed or dropped connection


class HASlave:
    def __init__(
        self,
        store: MessageStore,
        *,
        master_address: str | None = None,
        settings: SlaveSettings | None = None,
        clock: Clock = SYSTEM_CLOCK,
        fetch_epochs: Callable[[str], Awaitable[EpochAnswer]] | None = None,
    ) -> None:
        """``fetch_epochs(broker_address)``: the master's epochs (``rocketq.replication.epochs``)."""
        self._store = store
        self.master_address = master_address or None
        self.master_broker_address: str | None = None  # the master's broker port, for its epochs
        self._fetch_epochs = fetch_epochs
        self.truncations = 0  # times this slave cut its log back to its master's
        self.settings = settings or SlaveSettings()
        self._clock = clock
        self._changed = asyncio.Event()
        self._writer: asyncio.StreamWriter | None = None
        self._master_silence = frames.Silence(clock.time)  # since the master's last bytes
        self._since_report = frames.Silence(clock.time)  # since this slave's last report
        self.connections = 0  # connections made so far
        self._rate = ByteRate(clock.time)  # the master's bytes taken per second

    @property
    def connected(self) -> bool:
        return self._writer is not None

    def set_master(self, address: str | None, broker_address: str | None = None) -> None:
        """Follow the master at ``address`` (its HA ``host:port``; ``broker_address``: its broker port,
        asked for its epochs) from now on."""
        address = address or None
        if broker_address:
            self.master_broker_address = broker_address
        if address != self.master_address:
            log.info("slave: master HA address %s (was %s)", address, self.master_address)
            self.master_address = address
            self._changed.set()
            if self._writer is not None:
                self._writer.transport.abort()

    def state(self) -> ReplicationState:
        end = self._store.commit_log.max_offset
        return ReplicationState(
            role="SLAVE",
            max_offset=end,
            acked_offset=end,
            master_address=self.master_address,
            connected=self.connected,
            transferred_per_s=self._rate.per_second(),
            last_read_ms=int(self._master_silence.last * 1000),
            last_write_ms=int(self._since_report.last * 1000),
        )

    async def run(self) -> None:
        """Follow the master until cancelled, reconnecting after ``reconnect_interval_s``."""
        heartbeats = asyncio.create_task(self._heartbeats())
        try:
            while True:
                self._changed.clear()
                address = self.master_address
                if address is None:
                    await self._changed.wait()
                    continue
                try:
                    await self._follow(address)
                except (OSError, frames.ProtocolError, ValueError, TimeoutError, RemotingError) as exc:
                    log.warning("slave: replication from %s stopped: %s", address, exc)
                except Exception:  # (a full disk, a bug): retried like a dropped connection
                    log.exception("slave: replication from %s failed", address)
                if not self._changed.is_set():
                    await wanted_or_slept(self._changed, self._clock, self.settings.reconnect_interval_s)
        finally:
            heartbeats.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeats
            if self._writer is not None:
                self._writer.transport.abort()

    async def _check_epochs(self) -> None:
        """Cut this log back where it parts from the master's (when the master's address is known)."""
        broker_address = self.master_broker_address
        if self._fetch_epochs is None:
            return
        if broker_address is None:
            log.warning("slave: the master's broker address is not known: following it without comparing epochs")
            return
        answer = await self._fetch_epochs(broker_address)
        if reconcile(self._store, answer) is not None:
            self.truncations += 1

    async def _follow(self, address: str) -> None:
        await self._check_epochs()
        host, _, port = address.rpartition(":")
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            reader, writer = await asyncio.open_connection(host, int(port))
        store = self._store
        try:
            self._master_silence.heard()
            self._since_report.heard()
            writer.write(frames.encode_report(store.commit_log.max_offset))
            self._writer = writer
            self.connections += 1
            log.info("slave: replicating from %s at offset %d", address, store.commit_log.max_offset)
            frame_reader = frames.FrameReader()
            while True:
                data = await reader.read(READ_SIZE)
                if not data:
                    raise ConnectionResetError("the master closed the connection")
                self._master_silence.heard()
                self._rate.add(len(data))
                appended = False
                for frame in frame_reader.feed(data):
                    end = store.commit_log.max_offset
                    if frame.offset != end and end != 0:  # (an empty log starts where the master starts it)
                        raise frames.ProtocolError(f"the master sent offset {frame.offset}; this log ends at {end}")
                    if frame.body:
                        store.append_replica(frame.offset, frame.body)
                        appended = True
                if appended:
                    self._report(writer)
                    await writer.drain()
        finally:
            self._writer = None
            writer.transport.abort()

    def _report(self, writer: asyncio.StreamWriter) -> None:
        writer.write(frames.encode_report(self._store.commit_log.max_offset))
        self._since_report.heard()

    async def _heartbeats(self) -> None:
        """Report every ``heartbeat_interval_s`` while connected; leave a master silent too long."""
        settings = self.settings
        step = min(settings.heartbeat_interval_s, settings.housekeeping_interval_s) / 4
        while True:
            await self._clock.sleep(step)
            writer = self._writer
            if writer is None:
                continue
            if self._master_silence.over(settings.housekeeping_interval_s):
                log.warning("slave: master silent for %.0f s: reconnecting", self._master_silence.lasted())
                writer.transport.abort()
            elif self._since_report.over(settings.heartbeat_interval_s - step):  # (so never later than the interval)
                self._report(writer)
