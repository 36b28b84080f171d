"""KVConfigTable: the NameServer's namespace -> key -> value store (RocketMQ's ``KVConfigManager``).

Admin tools write it with PUT_KV_CONFIG; brokers get the ``ORDER_TOPIC_CONFIG`` namespace back in
every REGISTER_BROKER response, and with ``orderMessageEnable`` routes take ``orderTopicConf`` from
it. It lives in memory only: like the route table, it starts empty with each NameServer.
"""

from __future__ import annotations

import logging
from typing import Final

log = logging.getLogger(__name__)

ORDER_TOPIC_CONFIG: Final = "ORDER_TOPIC_CONFIG"
"""Namespace of ``topic -> "brokerName:queueNums;..."`` entries for ordered topics."""


class KVConfigTable:
    """Namespaced string settings. Not thread-safe: use from the NameServer's event loop."""

    def __init__(self) -> None:
        self._namespaces: dict[str, dict[str, str]] = {}

    def put(self, namespace: str, key: str, value: str) -> None:
        table = self._namespaces.setdefault(namespace, {})
        old = table.get(key)
        table[key] = value
        if old is None:
            log.info("kv config %s/%s created: %s", namespace, key, value)
        elif old != value:
            log.info("kv config %s/%s changed: %s -> %s", namespace, key, old, value)

    def get(self, namespace: str, key: str) -> str | None:
        return self._namespaces.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> bool:
        """Remove one key; an emptied namespace goes too. True if the key existed."""
        table = self._namespaces.get(namespace)
        if table is None or table.pop(key, None) is None:
            return False
        if not table:
            del self._namespaces[namespace]
        log.info("kv config %s/%s deleted", namespace, key)
        return True

    def namespace(self, namespace: str) -> dict[str, str] | None:
        """A copy of one namespace's entries, or None when it has none."""
        table = self._namespaces.get(namespace)
        return dict(table) if table else None
