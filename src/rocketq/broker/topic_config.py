"""Topic configurations of this broker, persisted in ``config/topics.json`` (TopicConfigManager)."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

from rocketq.common.message import SCHEDULE_TOPIC
from rocketq.common.names import topic_name_problem
from rocketq.protocol import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from rocketq.store.config_file import read_json, write_json_atomically

log = logging.getLogger(__name__)

PERM_PRIORITY = 8
PERM_READ = 4
PERM_WRITE = 2
PERM_INHERIT = 1
DEFAULT_TOPIC = "TBW102"
SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
BENCHMARK_TOPIC = "BenchmarkTest"
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"


def is_readable(perm: int) -> bool:
    return bool(perm & PERM_READ)


def is_writeable(perm: int) -> bool:
    return bool(perm & PERM_WRITE)


def topic_name_problem_in_cluster(topic: str, cluster_name: str) -> str | None:
    """Why ``topic`` is not a valid name on this broker, or None."""
    problem = topic_name_problem(topic)
    if problem is None and topic == cluster_name:
        return f"the topic name {topic!r} is the cluster's name"
    return problem


class TopicConfigManager:
    """Thread safety: mutations take a lock; reads of the table are safe from any thread."""

    def __init__(
        self,
        path: Path,
        *,
        broker_name: str,
        cluster_name: str,
        auto_create: bool,
        default_queues: int,
        cluster_topic: bool = True,
        broker_topic: bool = True,
    ) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion(timestamp=int(time.time() * 1000), counter=0)
        system = [
            TopicConfig(topic_name=SELF_TEST_TOPIC, read_queue_nums=1, write_queue_nums=1),
            TopicConfig(topic_name=BENCHMARK_TOPIC, read_queue_nums=1024, write_queue_nums=1024),
            TopicConfig(topic_name=OFFSET_MOVED_EVENT, read_queue_nums=1, write_queue_nums=1),
            TopicConfig(topic_name=SCHEDULE_TOPIC, read_queue_nums=18, write_queue_nums=18),
            TopicConfig(topic_name=f"{cluster_name}_REPLY_TOPIC", read_queue_nums=1, write_queue_nums=1),
        ]
        if auto_create:
            system.append(
                TopicConfig(
                    topic_name=DEFAULT_TOPIC,
                    read_queue_nums=default_queues,
                    write_queue_nums=default_queues,
                    perm=PERM_INHERIT | PERM_READ | PERM_WRITE,
                )
            )
        if cluster_topic:
            system.append(
                TopicConfig(
                    topic_name=cluster_name,
                    read_queue_nums=16,
                    write_queue_nums=16,
                    perm=PERM_INHERIT | PERM_READ | PERM_WRITE,
                )
            )
        if broker_topic:
            system.append(
                TopicConfig(
                    topic_name=broker_name,
                    read_queue_nums=1,
                    write_queue_nums=1,
                    perm=PERM_INHERIT | PERM_READ | PERM_WRITE,
                )
            )
        for config in system:
            self.table[config.topic_name] = config
        self.system_topics = frozenset(self.table)

    def load(self) -> None:
        document = read_json(self.path)
        if not document:
            return
        wrapper = TopicConfigSerializeWrapper.decode(json.dumps(document).encode())
        self.table.update(wrapper.topic_config_table)
        self.data_version = wrapper.data_version
        log.info("loaded %d topic configs from %s", len(wrapper.topic_config_table), self.path)

    def persist(self) -> None:
        with self._lock:
            wrapper = self.wrapper()
        write_json_atomically(self.path, json.loads(wrapper.encode()))

    def wrapper(self) -> TopicConfigSerializeWrapper:
        return TopicConfigSerializeWrapper(topic_config_table=dict(self.table), data_version=self.data_version)

    def replace_all(self, wrapper: TopicConfigSerializeWrapper) -> bool:
        """A slave takes its master's table (``rocketq.replication.sync``); True when it differed (and
        was persisted)."""
        with self._lock:
            if wrapper.data_version == self.data_version and wrapper.topic_config_table == self.table:
                return False
            self.table = dict(wrapper.topic_config_table)
            self.data_version = wrapper.data_version
        self.persist()
        return True

    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def _bump(self) -> None:
        self.data_version = DataVersion(timestamp=int(time.time() * 1000), counter=self.data_version.counter + 1)

    def put(self, config: TopicConfig) -> bool:
        """Create or replace a topic; True when something changed (and was persisted)."""
        with self._lock:
            if self.table.get(config.topic_name) == config:
                return False
            self.table[config.topic_name] = config
            self._bump()
        self.persist()
        log.info(
            "topic %s: read=%d write=%d perm=%d",
            config.topic_name,
            config.read_queue_nums,
            config.write_queue_nums,
            config.perm,
        )
        return True

    def delete(self, topic: str) -> bool:
        with self._lock:
            if self.table.pop(topic, None) is None:
                return False
            self._bump()
        self.persist()
        return True

    def create_in_send(self, topic: str, default_topic: str, requested_queues: int) -> TopicConfig | None:
        """Auto-create ``topic`` from its template (TBW102) when the template allows inheritance."""
        template = self.table.get(default_topic)
        if template is None or not template.perm & PERM_INHERIT:
            return None
        queues = max(1, min(requested_queues, template.write_queue_nums))
        config = TopicConfig(
            topic_name=topic, read_queue_nums=queues, write_queue_nums=queues, perm=template.perm & ~PERM_INHERIT
        )
        self.put(config)
        return config

    def create_system_topic(
        self, topic: str, queues: int, perm: int = PERM_READ | PERM_WRITE
    ) -> tuple[TopicConfig, bool]:
        """Get or create a retry/DLQ-style topic; returns (config, created)."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing, False
        config = TopicConfig(topic_name=topic, read_queue_nums=queues, write_queue_nums=queues, perm=perm)
        return config, self.put(config)
