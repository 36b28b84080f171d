"""Consumer offsets: on the broker for clustering (RemoteBrokerOffsetStore), in a local file for
broadcasting (LocalFileOffsetStore). Both keep a table in memory and persist every few seconds."""

from __future__ import annotations

import abc
import fcntl
import json
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from rocketq.client.errors import MQClientError, RouteNotFoundError
from rocketq.client.message import MessageQueue
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode, make_request
from rocketq.protocol.headers import QueryConsumerOffsetRequestHeader, UpdateConsumerOffsetRequestHeader
from rocketq.remoting import RemotingError
from rocketq.remoting.connection import next_opaque

log = logging.getLogger(__name__)

Invoke = Callable[[MessageQueue, RemotingCommand], Awaitable[RemotingCommand | None]]
"""Send a request to the master of the queue's broker; None when that broker cannot be found."""


class OffsetStore(abc.ABC):
    """The in-memory table both stores share. Offsets only move forward unless asked otherwise."""

    def __init__(self) -> None:
        self.table: dict[MessageQueue, int] = {}

    def update(self, queue: MessageQueue, offset: int, *, increase_only: bool = True) -> None:
        current = self.table.get(queue)
        if current is None or not increase_only or offset > current:
            self.table[queue] = offset

    def remove(self, queue: MessageQueue) -> None:
        self.table.pop(queue, None)

    def open(self) -> None:  # noqa: B027 - a store with nothing to claim keeps this
        """Claim where the offsets are kept (the consumer's start, before any read)."""

    def close(self) -> None:  # noqa: B027
        """Let go of it (the consumer's close, after the last persist)."""

    @abc.abstractmethod
    async def read(self, queue: MessageQueue) -> int:
        """The stored offset, or -1 when there is none (the caller applies consume_from_where)."""

    @abc.abstractmethod
    async def persist(self, queue: MessageQueue) -> None:
        """Write the queue's offset where it is kept."""

    async def persist_all(self) -> None:
        for queue in list(self.table):
            await self.persist(queue)


class RemoteOffsetStore(OffsetStore):
    def __init__(self, group: str, invoke: Invoke) -> None:
        super().__init__()
        self._group = group
        self._invoke = invoke

    async def read(self, queue: MessageQueue) -> int:
        fields = QueryConsumerOffsetRequestHeader(
            consumer_group=self._group, topic=queue.topic, queue_id=queue.queue_id
        ).to_ext_fields()
        response = await self._invoke(
            queue, make_request(RequestCode.QUERY_CONSUMER_OFFSET, opaque=next_opaque(), ext_fields=fields)
        )
        if response is None:
            raise RouteNotFoundError(f"QUERY_CONSUMER_OFFSET for {queue}: no master broker is known")
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return -1
        if response.code != ResponseCode.SUCCESS:
            raise RemotingError(f"QUERY_CONSUMER_OFFSET for {queue} answered {response.code}: {response.remark}")
        offset = int(response.ext_fields.get("offset", -1))
        self.update(queue, offset, increase_only=False)
        return offset

    async def persist(self, queue: MessageQueue) -> None:
        offset = self.table.get(queue)
        if offset is None:
            return
        fields = UpdateConsumerOffsetRequestHeader(
            consumer_group=self._group, topic=queue.topic, queue_id=queue.queue_id, commit_offset=offset
        ).to_ext_fields()
        try:
            await self._invoke(
                queue, make_request(RequestCode.UPDATE_CONSUMER_OFFSET, opaque=next_opaque(), ext_fields=fields)
            )
        except RemotingError as exc:
            log.info("offset commit of %s failed: %s", queue, exc)


class LocalFileOffsetStore(OffsetStore):
    """Broadcasting offsets in ``<directory>/<ip>@<instance name>/<group>/offsets.json`` (RocketMQ's
    layout), written atomically. A member holds ``offsets.lock`` beside the file while it runs, so a
    second member of the group with the same instance name on the same host fails to start instead of
    overwriting the first one's offsets."""

    def __init__(self, directory: Path, owner: str, group: str) -> None:
        super().__init__()
        self.owner = owner
        self.group = group
        self.path = directory / owner / group / "offsets.json"
        self._loaded: dict[str, int] = {}
        self._lock_fd: int | None = None

    def open(self) -> None:
        if self._lock_fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_fd = os.open(self.path.with_name("offsets.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock_fd)
            raise MQClientError(
                f"{self.path} is in use by another broadcasting member of group {self.group!r} with the same"
                f" client address and instance name ({self.owner}); give each member its own instance_name"
            ) from None
        self._lock_fd = lock_fd
        try:
            document = json.loads(self.path.read_text())
            self._loaded = {str(key): int(value) for key, value in document.get("offsetTable", {}).items()}
        except FileNotFoundError:
            pass
        except (ValueError, AttributeError) as exc:
            log.warning("%s is unreadable (%s); starting without local offsets", self.path, exc)

    def close(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    @staticmethod
    def _key(queue: MessageQueue) -> str:
        return f"{queue.topic}@{queue.broker_name}@{queue.queue_id}"

    async def read(self, queue: MessageQueue) -> int:
        offset = self.table.get(queue, self._loaded.get(self._key(queue), -1))
        if offset >= 0:
            self.update(queue, offset, increase_only=False)
        return offset

    async def persist(self, queue: MessageQueue) -> None:
        await self.persist_all()

    async def persist_all(self) -> None:
        merged = dict(self._loaded)
        merged.update({self._key(queue): offset for queue, offset in self.table.items()})
        self._loaded = merged
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(self.path.name + ".tmp")
        temp.write_text(json.dumps({"offsetTable": merged}, indent=1, sort_keys=True))
        with temp.open("rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temp, self.path)
