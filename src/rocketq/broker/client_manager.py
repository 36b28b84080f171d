"""Producers and consumers known to this broker, by group (ProducerManager + ConsumerManager).

Pure bookkeeping keyed by connection; the broker's I/O (notifications, closing channels) happens in
the handlers and the server. Subscriptions keep the tag hash codes recomputed from the expression,
because the C++ client sends all-zero code sets
(docs/protocol.md#rule-8-subscriptions-come-from-the-pull-or-the-heartbeat).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field

from rocketq.common.message import tags_hash_code
from rocketq.filter import is_tag_type

MATCH_ALL = "*"


@dataclass(frozen=True, slots=True)
class Subscription:
    topic: str
    expression: str
    tags: frozenset[str]
    codes: frozenset[int]
    sub_version: int
    expression_type: str = "TAG"

    @property
    def matches_all(self) -> bool:
        """A tag subscription to every message (a SQL92 one never is: its selector decides)."""
        return not self.tags and is_tag_type(self.expression_type)


@functools.lru_cache(maxsize=4096)  # every pull carries its expression: parse each one once
def build_subscription(
    topic: str, expression: str | None, sub_version: int = 0, expression_type: str = "TAG"
) -> Subscription:
    """Parse a tag expression (``"TagA || TagB"``; ``"*"`` or empty matches everything). Another type's
    expression (SQL92) is kept as it is: the broker's filter compiles it."""
    text = (expression or "").strip()
    if not is_tag_type(expression_type):
        return Subscription(topic, text, frozenset(), frozenset(), sub_version, expression_type)
    if not text or text == MATCH_ALL:
        return Subscription(topic, MATCH_ALL, frozenset(), frozenset(), sub_version, expression_type)
    tags = frozenset(part.strip() for part in text.split("||") if part.strip())
    if MATCH_ALL in tags:
        return Subscription(topic, MATCH_ALL, frozenset(), frozenset(), sub_version, expression_type)
    return Subscription(topic, text, tags, frozenset(tags_hash_code(t) for t in tags), sub_version, expression_type)


@dataclass(slots=True)
class ClientChannel:
    client_id: str
    channel: object  # the connection; only identity matters here
    language: str
    version: int
    last_update: float


@dataclass(slots=True)
class ConsumerGroup:
    name: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    channels: dict[int, ClientChannel] = field(default_factory=dict)  # id(connection) -> channel
    subscriptions: dict[str, Subscription] = field(default_factory=dict)

    def client_ids(self) -> list[str]:
        return sorted({channel.client_id for channel in self.channels.values()})


class ClientManager:
    def __init__(self) -> None:
        self.consumers: dict[str, ConsumerGroup] = {}
        self.producers: dict[str, dict[int, ClientChannel]] = {}

    def register_consumer(
        self,
        group: str,
        channel: ClientChannel,
        *,
        consume_type: str,
        message_model: str,
        consume_from_where: str,
        subscriptions: Iterable[Subscription],
    ) -> bool:
        """Record a consumer heartbeat; True when the group's membership changed (a new channel)."""
        info = self.consumers.get(group)
        if info is None:
            info = self.consumers[group] = ConsumerGroup(group)
        info.consume_type, info.message_model, info.consume_from_where = consume_type, message_model, consume_from_where
        key = id(channel.channel)
        is_new = key not in info.channels or info.channels[key].client_id != channel.client_id
        info.channels[key] = channel
        topics = set()
        for subscription in subscriptions:
            topics.add(subscription.topic)
            current = info.subscriptions.get(subscription.topic)
            if current is None or current.sub_version <= subscription.sub_version or current != subscription:
                info.subscriptions[subscription.topic] = subscription
        for gone in info.subscriptions.keys() - topics:  # unsubscribed (RocketMQ: the group's members agree)
            del info.subscriptions[gone]
        return is_new

    def register_producer(self, group: str, channel: ClientChannel) -> None:
        self.producers.setdefault(group, {})[id(channel.channel)] = channel

    def unregister(self, client_id: str, producer_group: str | None, consumer_group: str | None) -> list[str]:
        """Drop a client from its groups; returns consumer groups whose membership changed."""
        if producer_group and producer_group in self.producers:
            channels = self.producers[producer_group]
            for key in [k for k, c in channels.items() if c.client_id == client_id]:
                del channels[key]
            if not channels:
                del self.producers[producer_group]
        changed = []
        if consumer_group and consumer_group in self.consumers:
            info = self.consumers[consumer_group]
            doomed = [k for k, c in info.channels.items() if c.client_id == client_id]
            for key in doomed:
                del info.channels[key]
            if doomed:
                changed.append(consumer_group)
            if not info.channels:
                del self.consumers[consumer_group]
        return changed

    def remove_channel(self, channel: object) -> list[str]:
        """A connection closed: forget it everywhere; returns consumer groups that changed."""
        key = id(channel)
        for group in list(self.producers):
            self.producers[group].pop(key, None)
            if not self.producers[group]:
                del self.producers[group]
        changed = []
        for group, info in list(self.consumers.items()):
            if info.channels.pop(key, None) is not None:
                changed.append(group)
                if not info.channels:
                    del self.consumers[group]
        return changed

    def expired_channels(self, now: float, timeout_s: float) -> list[object]:
        """Connections that sent no heartbeat for ``timeout_s``."""
        stale: dict[int, object] = {}
        for info in self.consumers.values():
            for key, channel in info.channels.items():
                if now - channel.last_update > timeout_s:
                    stale[key] = channel.channel
        for channels in self.producers.values():
            for key, channel in channels.items():
                if now - channel.last_update > timeout_s:
                    stale[key] = channel.channel
        return list(stale.values())

    def consumer_ids(self, group: str) -> list[str]:
        info = self.consumers.get(group)
        return info.client_ids() if info else []

    def channels_of(self, group: str) -> list[object]:
        info = self.consumers.get(group)
        return [channel.channel for channel in info.channels.values()] if info else []

    def subscription(self, group: str, topic: str) -> Subscription | None:
        info = self.consumers.get(group)
        return info.subscriptions.get(topic) if info else None
