"""SQL92 subscriptions the broker knows, per topic and group (RocketMQ's ConsumerFilterManager),
persisted in ``config/consumerFilter.json``.

Heartbeats register each group's SQL92 subscriptions; a subscription a group drops, or a group whose
last member leaves, is marked dead and forgotten ``filter_data_clean_time_span`` later. A dead one
is still given bits at dispatch until then (so a group that comes back keeps its history), as in
RocketMQ. After a restart every loaded subscription counts as dead until its group heartbeats again.

Each entry carries its bloom bits (``rocketq.filter.bloom``) and ``born_offset``: the CommitLog
offset from which every dispatched message's bit map was computed with this subscription known
(``-1`` until the dispatcher takes it up). rocketq keeps that offset because a clock cannot say it
exactly; the file also keeps RocketMQ's ``bornTime``, and its layout, so either broker reads it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocketq.filter import Selector, compile_selector, is_tag_type
from rocketq.filter.bloom import BloomFilter, BloomFilterData
from rocketq.filter.errors import FilterExpressionError
from rocketq.store.config_file import read_json, write_json_atomically

log = logging.getLogger(__name__)

DEAD_ON_LOAD_MS = 30_000  # RocketMQ's: loaded subscriptions died 30 s before the load


@dataclass(slots=True)
class ConsumerFilterData:
    consumer_group: str
    topic: str
    expression: str
    expression_type: str
    selector: Selector
    born_time: int  # ms
    client_version: int  # the subscription's subVersion
    bloom: BloomFilterData
    dead_time: int = 0  # ms; dead when >= born_time
    born_offset: int = -1  # CommitLog offset from which bit maps include this (-1: not yet)

    @property
    def dead(self) -> bool:
        return self.dead_time >= self.born_time

    def to_json(self) -> dict[str, Any]:
        return {
            "consumerGroup": self.consumer_group,
            "topic": self.topic,
            "expression": self.expression,
            "expressionType": self.expression_type,
            "bornTime": self.born_time,
            "deadTime": self.dead_time,
            "dead": self.dead,
            "clientVersion": self.client_version,
            "bloomFilterData": {"bitNum": self.bloom.bit_num, "bitPos": list(self.bloom.bit_pos)},
            "bornOffset": self.born_offset,
        }


@dataclass(frozen=True, slots=True)
class SqlSubscription:
    topic: str
    expression: str
    expression_type: str
    version: int


@dataclass(slots=True)
class ConsumerFilterManager:
    path: Path
    bloom: BloomFilter
    clean_after_ms: int = 24 * 3600 * 1000
    clock: Callable[[], float] = time.time
    _topics: dict[str, dict[str, ConsumerFilterData]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    changed: bool = False  # since the last persist
    # What the dispatcher computes bit maps for: the subscriptions as last written to the file (a
    # subscription replaced or forgotten stops getting bits only once the file no longer has it).
    published: dict[str, tuple[ConsumerFilterData, ...]] = field(default_factory=dict)

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    # -- registration ---------------------------------------------------------------------------------

    def register(self, group: str, subscriptions: Iterable[SqlSubscription]) -> None:
        """A heartbeat's subscriptions of ``group`` (those of other types are ignored); topics the group
        no longer subscribes die. The expressions were checked by the caller."""
        now = self._now_ms()
        topics = set()
        with self._lock:
            for subscription in subscriptions:
                if is_tag_type(subscription.expression_type) or not subscription.expression:
                    continue
                topics.add(subscription.topic)
                self._register(group, subscription, now)
            for by_group in self._topics.values():
                data = by_group.get(group)
                if data is not None and data.topic not in topics and not data.dead:
                    data.dead_time = now
                    self.changed = True
                    log.info("filter of group %s on %s died: no longer subscribed", group, data.topic)

    def _register(self, group: str, subscription: SqlSubscription, now: int) -> None:
        by_group = self._topics.setdefault(subscription.topic, {})
        old = by_group.get(group)
        bloom = self.bloom.generate(f"{group}#{subscription.topic}")
        if old is not None and subscription.version <= old.client_version:
            if subscription.version == old.client_version and old.dead:
                old.dead_time = 0  # the same subscription is back
                self.changed = True
            return
        if old is not None and old.expression == subscription.expression and old.bloom == bloom:
            old.client_version = subscription.version
            old.dead_time = 0
            self.changed = True
            return
        try:
            selector = compile_selector(subscription.expression)
        except FilterExpressionError:
            by_group.pop(group, None)  # a newer expression that does not parse: the old one goes too
            return
        by_group[group] = ConsumerFilterData(
            group, subscription.topic, subscription.expression, subscription.expression_type, selector, now,
            subscription.version, bloom,
        )  # fmt: skip
        self.changed = True
        log.info("filter of group %s on %s: %s", group, subscription.topic, subscription.expression)

    def unregister(self, group: str) -> None:
        """The group's last member left: its subscriptions die."""
        now = self._now_ms()
        with self._lock:
            for by_group in self._topics.values():
                data = by_group.get(group)
                if data is not None and not data.dead:
                    data.dead_time = now
                    self.changed = True

    def get(self, topic: str, group: str) -> ConsumerFilterData | None:
        with self._lock:
            return self._topics.get(topic, {}).get(group)

    def of_topic(self, topic: str) -> list[ConsumerFilterData]:
        with self._lock:
            return list(self._topics.get(topic, {}).values())

    def all(self) -> list[ConsumerFilterData]:
        with self._lock:
            return [data for by_group in self._topics.values() for data in by_group.values()]

    def clean(self) -> list[ConsumerFilterData]:
        """Forget subscriptions dead for ``clean_after_ms``; returns them."""
        now = self._now_ms()
        gone = []
        with self._lock:
            for topic, by_group in list(self._topics.items()):
                for group, data in list(by_group.items()):
                    if data.dead and now - data.dead_time >= self.clean_after_ms:
                        gone.append(by_group.pop(group))
                if not by_group:
                    del self._topics[topic]
            if gone:
                self.changed = True
        return gone

    # -- the file -------------------------------------------------------------------------------------

    def load(self, commit_log_end: int) -> None:
        """Read ``consumerFilter.json``. Entries whose bloom bits another filter size made are all
        ignored (RocketMQ's rule); one never taken up by the dispatcher is born at ``commit_log_end``."""
        document = read_json(self.path) or {}
        loaded: dict[str, dict[str, ConsumerFilterData]] = {}
        dead_time = self._now_ms() - DEAD_ON_LOAD_MS
        for topic, entry in (document.get("filterDataByTopic") or {}).items():
            for group, raw in ((entry or {}).get("groupFilterData") or {}).items():
                data = self._decode(topic, group, raw or {})
                if data is None:
                    continue
                if not self.bloom.is_valid(data.bloom):
                    log.warning("%s: the bloom filter's size changed; its filter data is ignored", self.path)
                    return
                if data.born_offset < 0:
                    data.born_offset = commit_log_end
                if not data.dead:
                    data.dead_time = max(dead_time, data.born_time)
                loaded.setdefault(topic, {})[group] = data
        with self._lock:
            self._topics = loaded
            self.published = {topic: tuple(by_group.values()) for topic, by_group in loaded.items()}

    @staticmethod
    def _decode(topic: str, group: str, raw: dict[str, Any]) -> ConsumerFilterData | None:
        try:
            bloom_raw = raw.get("bloomFilterData") or {}
            bloom = BloomFilterData(
                tuple(int(p) for p in bloom_raw.get("bitPos") or ()), int(bloom_raw.get("bitNum", 0))
            )
            expression = str(raw["expression"])
            return ConsumerFilterData(
                group, topic, expression, str(raw.get("expressionType", "SQL92")), compile_selector(expression),
                int(raw.get("bornTime", 0)), int(raw.get("clientVersion", 0)), bloom, int(raw.get("deadTime", 0)),
                int(raw.get("bornOffset", -1)),
            )  # fmt: skip
        except (KeyError, TypeError, ValueError) as exc:  # FilterExpressionError is a ValueError
            log.warning("consumerFilter.json: filter of %s on %s is ignored: %s", group, topic, exc)
            return None

    def persist(self) -> None:
        """Write ``consumerFilter.json``, then publish what it holds to the dispatcher."""
        with self._lock:
            document = {
                "filterDataByTopic": {
                    topic: {"topic": topic, "groupFilterData": {g: d.to_json() for g, d in by_group.items()}}
                    for topic, by_group in self._topics.items()
                }
            }
            snapshot = {topic: tuple(by_group.values()) for topic, by_group in self._topics.items()}
            self.changed = False
        write_json_atomically(self.path, document)
        self.published = snapshot
