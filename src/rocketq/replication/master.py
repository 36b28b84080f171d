"""The master's HA service (RocketMQ's HAService and HAConnection, master side): it listens on the HA
port, takes each slave's reports of how far its CommitLog reaches, and streams the CommitLog to it from
there (``rocketq.replication.frames`` for the bytes).

What slaves acknowledged is an ``OffsetWaiters`` (the same kind of waiters the SYNC_FLUSH group commit
releases): a SYNC_MASTER put waits on it through the broker's ``FlushWaits``. Runs on the broker's
event loop; ``clock`` (a ``rocketq.remoting.clock.Clock``) paces heartbeats and times out silent slaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from rocketq.remoting.clock import SYSTEM_CLOCK, Clock, wanted_or_slept
from rocketq.replication import frames
from rocketq.replication.state import ByteRate, ReplicationState, SlaveState
from rocketq.store import MessageStore
from rocketq.store.flush import OffsetWaiters

log = logging.getLogger(__name__)

WRITE_BUFFER_HIGH_WATER = 4 * 1024 * 1024
"""Unsent bytes to one slave at which the stream waits for the socket to drain."""
YIELD_EVERY_BYTES = 1024 * 1024
"""A stream catching up hands the event loop over after this many bytes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MasterSettings:
    heartbeat_interval_s: float = 5.0  # haSendHeartbeatInterval: an idle stream says so this often
    housekeeping_interval_s: float = 20.0  # haHousekeepingInterval: a slave silent this long is dropped
    transfer_batch_size: int = frames.TRANSFER_BATCH_SIZE  # haTransferBatchSize
    slave_fallbehind_max: int = 256 * 1024 * 1024  # haSlaveFallbehindMax: further behind is "not available"


class _Slave:
    """One connected slave: where it is, what it acknowledged."""

    def __init__(self, address: str, clock: Clock) -> None:
        self.address = address
        self.acked: int | None = None  # None until its first report
        self.sent = 0  # how far the stream has sent
        self.transfer_from = 0  # where the stream started
        self.rate = ByteRate(clock.time)  # CommitLog bytes sent per second
        self.first_report = asyncio.Event()
        self.new_data = asyncio.Event()
        self.silence = frames.Silence(clock.time)  # since its last report


class HAMaster:
    def __init__(
        self,
        store: MessageStore,
        *,
        host: str,
        port: int,
        settings: MasterSettings | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._store = store
        self._host = host
        self._requested_port = port
        self.settings = settings or MasterSettings()
        self._clock = clock
        self._slaves: set[_Slave] = set()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.acked = OffsetWaiters()  # the newest offset any slave acknowledged
        self.port = 0

    async def start(self) -> HAMaster:
        self._loop = asyncio.get_running_loop()
        self._server = await asyncio.start_server(self._serve, self._host, self._requested_port)
        self.port = self._server.sockets[0].getsockname()[1]
        self._store.add_arrival_listener(self._on_arrival)
        log.info("HA service listening on %s:%d", self._host, self.port)
        return self

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        self.acked.fail(RuntimeError("HA service closed"))

    # -- what the broker asks -------------------------------------------------------------------------

    def notify(self) -> None:
        """New bytes in the CommitLog: stream them now (call on the loop)."""
        for slave in self._slaves:
            slave.new_data.set()

    def _on_arrival(self, _topic: str, _queue_id: int, _max_offset: int, _timestamp: int, _record: object) -> None:
        loop = self._loop
        if self._slaves and loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self.notify)

    def available(self, end_offset: int) -> bool:
        """A slave is connected, has reported, and is less than ``slave_fallbehind_max`` behind
        ``end_offset`` (else a SYNC_MASTER put answers SLAVE_NOT_AVAILABLE at once)."""
        limit = self.settings.slave_fallbehind_max
        return any(slave.acked is not None and end_offset - slave.acked < limit for slave in self._slaves)

    def acked_on_loop(self, end_offset: int, loop: Any) -> Any:
        """A future of ``loop`` resolved once a slave acknowledged the log up to ``end_offset``."""
        self.notify()
        return self.acked.request_on_loop(end_offset, loop)

    def state(self) -> ReplicationState:
        end = self._store.commit_log.max_offset
        limit = self.settings.slave_fallbehind_max
        slaves = [
            SlaveState(
                address=slave.address,
                acked_offset=slave.acked,
                lag_bytes=max(0, end - slave.acked),
                in_sync=end - slave.acked < limit,
                transfer_from=slave.transfer_from,
                transferred_per_s=slave.rate.per_second(),
            )
            for slave in sorted(self._slaves, key=lambda s: s.address)
            if slave.acked is not None
        ]
        return ReplicationState(
            role="MASTER", max_offset=end, acked_offset=self.acked.reached, slaves=slaves, master_address=None
        )

    # -- one slave ------------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        slave = _Slave(f"{peer[0]}:{peer[1]}" if peer else "?", self._clock)
        self._slaves.add(slave)
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        log.info("slave %s connected", slave.address)
        parts = [
            asyncio.create_task(self._read_reports(slave, reader)),
            asyncio.create_task(self._stream(slave, writer)),
            asyncio.create_task(self._watch(slave)),
        ]
        try:
            await asyncio.wait(parts, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._slaves.discard(slave)
            for part in parts:
                part.cancel()
            for part in parts:
                try:
                    await part
                except frames.ProtocolError as exc:
                    log.error("slave %s refused: %s", slave.address, exc)
                except (ConnectionError, OSError) as exc:
                    log.info("slave %s: %s", slave.address, exc)
                except asyncio.CancelledError:
                    pass
                except Exception:
                    log.exception("HA connection of slave %s failed", slave.address)
            writer.transport.abort()
            self._tasks.discard(task)
            log.info("slave %s disconnected (acknowledged %s)", slave.address, slave.acked)

    async def _read_reports(self, slave: _Slave, reader: asyncio.StreamReader) -> None:
        reports = frames.ReportReader()
        while True:
            data = await reader.read(4096)
            if not data:
                return
            offset = reports.feed(data)
            if offset is None:
                continue
            end = self._store.commit_log.max_offset
            if offset > end:  # (never counted as acknowledged: SYNC_MASTER puts must not pass on it)
                raise frames.ProtocolError(
                    f"it reports offset {offset}, beyond this master's end {end}: its log has diverged (a former"
                    " master?) and is not replicated to until its store is emptied"
                )
            slave.silence.heard()
            slave.acked = offset if slave.acked is None else max(slave.acked, offset)
            if not slave.first_report.is_set():
                slave.first_report.set()
            self.acked.advance(slave.acked)

    async def _watch(self, slave: _Slave) -> None:
        """Return (which drops the connection) once ``slave`` is silent for ``housekeeping_interval_s``."""
        limit = self.settings.housekeeping_interval_s
        while not slave.silence.over(limit):
            await self._clock.sleep(limit / 4)
        log.warning("slave %s silent for %.0f s: dropping it", slave.address, slave.silence.lasted())

    async def _stream(self, slave: _Slave, writer: asyncio.StreamWriter) -> None:
        """Stream the log to ``slave`` from its first report on, a heartbeat when idle."""
        store, settings = self._store, self.settings
        file_size = store.config.mapped_file_size_commit_log
        await slave.first_report.wait()
        assert slave.acked is not None
        offset = frames.transfer_start(slave.acked, store.commit_log.max_offset, file_size)
        slave.sent = slave.transfer_from = offset
        last_write = self._clock.time()
        unyielded = 0
        while True:
            end = store.commit_log.max_offset
            size = frames.chunk_size(offset, end, file_size, settings.transfer_batch_size)
            data = store.read_commit_log(offset, size) if size else b""
            if size and not data and offset < store.commit_log.min_offset:  # retention deleted it
                log.error("slave %s wants offset %d, which this master no longer has", slave.address, offset)
                return
            if data:  # (none also while a put rolls into a new file: the log's end is not published yet)
                writer.write(frames.encode_frame(offset, data))
                offset += len(data)
                slave.sent = offset
                slave.rate.add(len(data))
                last_write = self._clock.time()
                unyielded += len(data)
                if writer.transport.get_write_buffer_size() > WRITE_BUFFER_HIGH_WATER:
                    await writer.drain()
                    unyielded = 0
                elif unyielded >= YIELD_EVERY_BYTES:  # let the loop serve others during a long catch-up
                    await asyncio.sleep(0)
                    unyielded = 0
                continue
            if self._clock.time() - last_write >= settings.heartbeat_interval_s:
                writer.write(frames.encode_frame(offset))
                last_write = self._clock.time()
            await writer.drain()
            slave.new_data.clear()
            if store.commit_log.max_offset > offset:
                await asyncio.sleep(0)
                continue
            await wanted_or_slept(slave.new_data, self._clock, settings.heartbeat_interval_s)
