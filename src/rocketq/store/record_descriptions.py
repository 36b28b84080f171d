"""What the dispatcher needs of each CommitLog record (a ``DispatchRequest``), made in one place for
the put that wrote the record and for the scan that reads it back, and the queue in which puts leave
theirs for the dispatcher, so that what a put knows is not read back and parsed again."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Final

from rocketq.common.message import (
    KEY_SEPARATOR,
    NAME_VALUE_SEPARATOR,
    SCHEDULE_TOPIC,
    Property,
    find_property,
    property_value,
    tags_hash_code,
)
from rocketq.store.results import DispatchRequest

# the names every record is searched for, with their separator (``property_value``'s keys)
_TAGS_KEY: Final = Property.TAGS + NAME_VALUE_SEPARATOR
_KEYS_KEY: Final = Property.KEYS + NAME_VALUE_SEPARATOR
_UNIQ_KEY_KEY: Final = Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX + NAME_VALUE_SEPARATOR
_TAGS_CODES_KEPT = 100_000  # tag texts whose hash codes are remembered

APPENDED_MAX = 65_536
"""At most this many put records wait in ``RecordDescriptions.appended`` (a dispatcher that cannot keep
up, or is stuck on a full disk, scans the rest from the log)."""


class RecordDescriptions:
    """Makes records' ``DispatchRequest``s (``describe``) and holds the puts' ones in log order
    (``appended``) until the dispatcher takes them (``take``). Puts add under the CommitLog's put lock;
    the dispatcher takes from its own thread (deque appends and pops are atomic)."""

    def __init__(self, delay_levels_ms: Sequence[int]) -> None:
        self._delay_levels_ms = list(delay_levels_ms)
        self._tags_codes: dict[str, int] = {}
        self.appended: deque[DispatchRequest] = deque()
        """The records puts wrote, as the dispatcher needs them. Records written otherwise (wire
        batches, a slave's copy, recovery) are not here: the dispatcher scans them."""

    def describe(
        self,
        topic: str,
        queue_id: int,
        physical: int,
        size: int,
        store_timestamp: int,
        queue_offset: int,
        sys_flag: int,
        properties: str,
    ) -> DispatchRequest:
        """A record's ``DispatchRequest``: its header fields, and the tag code (a delayed message's due
        time in SCHEDULE_TOPIC_XXXX), keys and UNIQ_KEY from its properties text."""
        if not properties:
            tags_code, keys, uniq_key = 0, None, None
        else:
            if topic == SCHEDULE_TOPIC:
                tags_code = self._delivery_time(properties, store_timestamp)
            else:
                tags = property_value(properties, _TAGS_KEY)
                tags_code = self._tags_code(tags) if tags else 0
            keys, uniq_key = property_value(properties, _KEYS_KEY), property_value(properties, _UNIQ_KEY_KEY)
        return DispatchRequest(
            topic,
            queue_id,
            physical,
            size,
            tags_code,
            store_timestamp,
            queue_offset,
            keys.split(KEY_SEPARATOR) if keys else (),
            uniq_key,
            sys_flag,
        )

    def room_for(self, count: int) -> bool:
        """Whether ``count`` more put records may wait (else the dispatcher scans them)."""
        return len(self.appended) + count <= APPENDED_MAX

    def add_put(
        self,
        topic: str,
        queue_id: int,
        physical: int,
        size: int,
        store_timestamp: int,
        queue_offset: int,
        sys_flag: int,
        properties: str,
    ) -> None:
        """Leave the description (``describe``) of the record a put just published, when there is room
        for it (``room_for(1)``: else the dispatcher scans it). A put of several records asks
        ``room_for`` them all first."""
        if self.room_for(1):
            self.appended.append(
                self.describe(topic, queue_id, physical, size, store_timestamp, queue_offset, sys_flag, properties)
            )

    def take(self, from_offset: int, end_offset: int, max_records: int) -> list[DispatchRequest]:
        """The put records that follow each other from ``from_offset`` on and end by ``end_offset`` (at
        most ``max_records``), taken out; records before ``from_offset`` (already dispatched from a
        scan) are dropped. Empty when the record at ``from_offset`` is not there (written otherwise, or
        after a filler): the caller scans it. Called by the dispatcher only."""
        self.drop_before(from_offset)
        appended = self.appended
        taken: list[DispatchRequest] = []
        offset = from_offset
        while appended and len(taken) < max_records:
            request = appended[0]
            if request.commit_log_offset != offset or offset + request.size > end_offset:
                break
            taken.append(appended.popleft())
            offset += request.size
        return taken

    def drop_before(self, offset: int) -> None:
        """Forget the put records that start before ``offset`` (dispatched from a scan of the log)."""
        appended = self.appended
        while appended and appended[0].commit_log_offset < offset:
            appended.popleft()

    def clear(self) -> None:
        self.appended.clear()

    def _delivery_time(self, properties: str, store_timestamp: int) -> int:
        """A delayed message's ConsumeQueue tag code: when it is due."""
        level_text = find_property(properties, Property.DELAY_TIME_LEVEL) or "0"
        levels = self._delay_levels_ms
        level = min(max(int(level_text) if level_text.isdigit() else 0, 1), len(levels))
        return store_timestamp + levels[level - 1]

    def _tags_code(self, tags: str) -> int:
        code = self._tags_codes.get(tags)
        if code is None:
            code = tags_hash_code(tags)
            if len(self._tags_codes) < _TAGS_CODES_KEPT:
                self._tags_codes[tags] = code
        return code
