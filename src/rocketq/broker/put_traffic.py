"""PutTraffic: what producers stored, by topic: messages and record bytes since the broker started
(RocketMQ's BrokerStatsManager counts the same as TOPIC_PUT_NUMS and TOPIC_PUT_SIZE).

The send handler adds each accepted request's messages (``record``, on the loop's thread: two dict
updates per request, whatever its batch holds); the Prometheus metrics read the totals when scraped
(``rocketq.metrics.broker``: ``rocketmq_messages_in_total``, ``rocketmq_throughput_in_total``)."""

from __future__ import annotations


class PutTraffic:
    def __init__(self) -> None:
        self.messages: dict[str, int] = {}
        self.bytes: dict[str, int] = {}

    def record(self, topic: str, messages: int, size: int) -> None:
        """A send to ``topic`` stored ``messages`` records of ``size`` bytes in all."""
        self.messages[topic] = self.messages.get(topic, 0) + messages
        self.bytes[topic] = self.bytes.get(topic, 0) + size
