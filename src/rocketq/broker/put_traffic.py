"""PutTraffic: what producers stored, by topic: messages and record bytes since the broker started
(RocketMQ's BrokerStatsManager counts the same as TOPIC_PUT_NUMS and TOPIC_PUT_SIZE).

The send handler adds each accepted request's messages (``record``, on the loop's thread: one dict
lookup and two additions to the topic's ``TopicPuts`` per request, whatever its batch holds); the
Prometheus metrics and the runtime stats read the totals when asked (``messages`` and ``bytes``: dicts
made then; ``rocketq.metrics.broker``: ``rocketmq_messages_in_total``, ``rocketmq_throughput_in_total``)."""

from __future__ import annotations


class TopicPuts:
    """What sends stored in one topic: messages and record bytes. One object per topic, kept for the
    broker's life and bumped by each send (one dict lookup instead of two gets and two sets)."""

    __slots__ = ("bytes", "messages")

    def __init__(self) -> None:
        self.messages = 0
        self.bytes = 0


class PutTraffic:
    def __init__(self) -> None:
        self._topics: dict[str, TopicPuts] = {}

    def record(self, topic: str, messages: int, size: int) -> None:
        """A send to ``topic`` stored ``messages`` records of ``size`` bytes in all."""
        puts = self._topics.get(topic)
        if puts is None:
            puts = self._topics[topic] = TopicPuts()
        puts.messages += messages
        puts.bytes += size

    @property
    def messages(self) -> dict[str, int]:
        """Messages stored by sends, by topic, since the broker started (a copy)."""
        return {topic: puts.messages for topic, puts in self._topics.items()}

    @property
    def bytes(self) -> dict[str, int]:
        """Record bytes stored by sends, by topic, since the broker started (a copy)."""
        return {topic: puts.bytes for topic, puts in self._topics.items()}
