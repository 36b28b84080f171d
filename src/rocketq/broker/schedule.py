"""Delayed delivery (ScheduleMessageService): messages with a delay level wait in SCHEDULE_TOPIC_XXXX,
queue ``level - 1``, whose ConsumeQueue tag code is the delivery time. For each level this service
walks its queue in order and re-puts every due message to its real topic and queue. Progress per
level is persisted in ``config/delayOffset.json``; after a restart delivery resumes from there, so
nothing is lost and nothing is delivered early (a crash between a delivery and the next persist can
deliver a message twice, as in RocketMQ).
"""

from __future__ import annotations

import asyncio
import logging

from rocketq.broker.context import BrokerContext
from rocketq.common.message import SCHEDULE_TOPIC, Property, decode_properties, encode_properties
from rocketq.store import MessageToStore
from rocketq.store.config_file import read_json, write_json_atomically
from rocketq.store.consume_queue import PADDING_SIZE

log = logging.getLogger(__name__)

POLL_INTERVAL_S = 0.1
PERSIST_INTERVAL_S = 10.0


class ScheduleService:
    def __init__(self, context: BrokerContext) -> None:
        self._context = context
        self._store = context.store
        self._levels = len(self._store.config.delay_levels_ms())
        self._path = context.config.store_path_root_dir / "config" / "delayOffset.json"
        self.offsets: dict[int, int] = {}
        self.delivered = 0  # messages delivered to their real topic since the start
        self.passes = 0  # delivery passes over every level since the start

    def load(self) -> None:
        document = read_json(self._path) or {}
        self.offsets = {int(level): int(offset) for level, offset in (document.get("offsetTable") or {}).items()}

    def persist(self) -> None:
        write_json_atomically(self._path, {"offsetTable": {str(k): v for k, v in sorted(self.offsets.items())}})

    async def run(self) -> None:
        """Deliver what is due every ``POLL_INTERVAL_S`` and persist the progress every
        ``PERSIST_INTERVAL_S``, both on the broker's clock (``BrokerContext.clock``), so a test's
        ``FakeClock`` decides when a delayed message is due."""
        clock = self._context.clock
        last_persist = clock.time()
        while True:
            now_ms = int(clock.time() * 1000)
            for level in range(1, self._levels + 1):
                try:
                    self.deliver_due(level, now_ms)
                except Exception:
                    log.exception("delay level %d: delivery failed; retrying", level)
            self.passes += 1
            if clock.time() - last_persist >= PERSIST_INTERVAL_S:
                await asyncio.to_thread(self.persist)
                last_persist = clock.time()
            await clock.sleep(POLL_INTERVAL_S)

    def deliver_due(self, level: int, now_ms: int) -> int:
        """Deliver every message of ``level`` due by ``now_ms``, in order; returns how many."""
        queue = self._store.find_consume_queue(SCHEDULE_TOPIC, level - 1)
        if queue is None:
            return 0
        offset = max(self.offsets.get(level, 0), queue.min_offset)
        delivered = 0
        while offset < queue.max_offset:
            entry = queue.entry(offset)
            if entry is None:
                break
            commit_offset, size, deliver_at = entry
            if size != PADDING_SIZE:
                if deliver_at > now_ms:
                    break
                if not self._deliver(commit_offset, level):
                    break
                delivered += 1
            offset += 1
        self.offsets[level] = offset
        self.delivered += delivered
        return delivered

    def _deliver(self, commit_offset: int, level: int) -> bool:
        record = self._store.lookup_message(commit_offset)
        if record is None:
            log.warning("delay level %d: message at %d is gone; skipping it", level, commit_offset)
            return True
        properties = decode_properties(record.properties)
        real_topic = properties.pop(Property.REAL_TOPIC, None)
        real_queue = properties.pop(Property.REAL_QUEUE_ID, "0")
        properties.pop(Property.DELAY_TIME_LEVEL, None)
        if not real_topic:
            log.warning("delay level %d: message at %d has no real topic; skipping it", level, commit_offset)
            return True
        result = self._store.put_message(
            MessageToStore(
                topic=real_topic,
                queue_id=int(real_queue) if real_queue.isdigit() else 0,
                body=record.body,
                properties=encode_properties(properties),
                flag=record.flag,
                sys_flag=record.sys_flag,
                born_timestamp=record.born_timestamp,
                born_host=record.born_host,
                store_host=record.store_host,
                reconsume_times=record.reconsume_times,
            )
        )
        if not result.ok:
            log.warning("delay level %d: delivery to %s refused (%s); retrying", level, real_topic, result.status.value)
        return result.ok
