"""Consumer group settings (SubscriptionGroupManager), persisted in ``config/subscriptionGroup.json``."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import msgspec

from rocketq.common.group_topics import TOOLS_CONSUMER_GROUP
from rocketq.protocol import DataVersion
from rocketq.protocol.bodies import SubscriptionGroupConfigBody
from rocketq.store.config_file import read_json, write_json_atomically

SubscriptionGroupConfig = SubscriptionGroupConfigBody
"""A group's settings; the wire body (camelCase JSON) is also what ``subscriptionGroup.json`` holds."""

_TOOLS_GROUP = SubscriptionGroupConfig(group_name=TOOLS_CONSUMER_GROUP)


class SubscriptionGroupManager:
    def __init__(self, path: Path, *, auto_create: bool) -> None:
        self.path = path
        self.auto_create = auto_create
        self.table: dict[str, SubscriptionGroupConfig] = {}
        self._lock = threading.Lock()
        self._counter = 0
        self._timestamp = int(time.time() * 1000)

    def load(self) -> None:
        document = read_json(self.path) or {}
        for name, data in (document.get("subscriptionGroupTable") or {}).items():
            self.table[name] = msgspec.convert(data, SubscriptionGroupConfig, strict=False)
        version = document.get("dataVersion") or {}
        self._counter = int(version.get("counter", 0))
        self._timestamp = int(version.get("timestamp", self._timestamp))

    def data_version(self) -> DataVersion:
        """Stamp of the table's current contents; changes with every put or delete."""
        with self._lock:
            return DataVersion(timestamp=self._timestamp, counter=self._counter)

    def find(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config, created with the defaults when unknown and auto-creation is on. The tools'
        group (``TOOLS_CONSUMER``) is known with the defaults unless configured, without being stored."""
        config = self.table.get(group)
        if config is None and group == TOOLS_CONSUMER_GROUP:
            return _TOOLS_GROUP
        if config is None and self.auto_create:
            config = SubscriptionGroupConfig(group_name=group)
            self.put(config)
        return config

    def put(self, config: SubscriptionGroupConfig) -> None:
        with self._lock:
            self.table[config.group_name] = config
            self._counter += 1
            self._timestamp = int(time.time() * 1000)
        self.persist()

    def replace_all(self, table: dict[str, SubscriptionGroupConfig], version: DataVersion) -> bool:
        """A slave takes its master's groups (``rocketq.replication.sync``); True when they differed."""
        with self._lock:
            if table == self.table and (self._counter, self._timestamp) == (version.counter, version.timestamp):
                return False
            self.table = dict(table)
            self._counter, self._timestamp = version.counter, version.timestamp
        self.persist()
        return True

    def delete(self, group: str) -> bool:
        with self._lock:
            removed = self.table.pop(group, None) is not None
            if removed:
                self._counter += 1
                self._timestamp = int(time.time() * 1000)
        if removed:
            self.persist()
        return removed

    def persist(self) -> None:
        with self._lock:
            document = {
                "dataVersion": {"counter": self._counter, "timestamp": self._timestamp},
                "subscriptionGroupTable": {name: msgspec.to_builtins(config) for name, config in self.table.items()},
            }
        write_json_atomically(self.path, document)
