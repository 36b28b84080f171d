"""RouteTable: everything a NameServer knows, as plain state (RocketMQ's ``RouteInfoManager``).

Five tables, all rebuilt from what brokers report, none persisted:

* topic -> {brokerName: QueueData}: which broker groups serve a topic, with how many queues;
* brokerName -> broker group: its cluster and its {brokerId: address} (0 is the master);
* cluster -> broker names;
* live brokers: address -> last registration time, topic-table DataVersion, connection id and
  HA address;
* filter servers: broker address -> filter server addresses.

Rules carried over from the Java NameServer:

* Topic queue data comes only from masters (brokerId 0), and only when the broker's DataVersion
  differs from the one it last reported or when this is its first registration; slaves and
  unchanged masters merely refresh their liveness.
* One address holds one brokerId: a slave promoted to master (same ``ip:port``, new id) replaces
  its old entry.
* Queue data belongs to a broker *name* (master and slaves together), so it disappears only when
  the last address of that name is gone; then topics left without queues disappear too, and so do
  empty clusters.

No I/O and no asyncio: time comes in as ``now`` (seconds on any monotonic clock) and connections
as opaque integer ids, so tests drive expiry without sleeping. Not thread-safe: the NameServer
uses it from its event loop only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from rocketq.protocol import (
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
)

log = logging.getLogger(__name__)

MASTER_ID: Final = 0
PERM_WRITE: Final = 2
PERM_READ: Final = 4
TOPIC_SYS_FLAG_UNIT: Final = 1
TOPIC_SYS_FLAG_UNIT_SUB: Final = 2


@dataclass(slots=True, kw_only=True)
class BrokerLiveInfo:
    """Liveness of one broker address."""

    last_update_s: float
    data_version: DataVersion
    connection_id: int | None
    ha_server_addr: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RegisterResult:
    """What a REGISTER_BROKER response carries: set only for a slave whose master is alive."""

    master_addr: str | None = None
    ha_server_addr: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RemovedBroker:
    """A broker address dropped from the table, for logging and for closing its connection."""

    broker_addr: str
    broker_name: str | None
    cluster: str | None
    connection_id: int | None
    group_removed: bool  # True when no address of broker_name is left


@dataclass(slots=True)
class _BrokerGroup:
    cluster: str
    name: str
    addrs: dict[int, str] = field(default_factory=dict)

    def to_broker_data(self) -> BrokerData:
        return BrokerData(cluster=self.cluster, broker_name=self.name, broker_addrs=dict(self.addrs))


class RouteTable:
    """The NameServer's routing state. See the module docstring for the rules."""

    def __init__(self, *, broker_expiry_s: float = 120.0) -> None:
        self.broker_expiry_s = broker_expiry_s
        self._topic_queues: dict[str, dict[str, QueueData]] = {}
        self._brokers: dict[str, _BrokerGroup] = {}
        self._clusters: dict[str, set[str]] = {}
        self._live: dict[str, BrokerLiveInfo] = {}
        self._filter_servers: dict[str, list[str]] = {}

    # -- registration ---------------------------------------------------------------------------

    def register_broker(
        self,
        *,
        cluster: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str,
        topic_config_wrapper: TopicConfigSerializeWrapper | None,
        filter_servers: Sequence[str] | None,
        now: float,
        connection_id: int | None = None,
    ) -> RegisterResult:
        """Record a broker's (periodic) registration.

        Args:
            topic_config_wrapper: The broker's topic table and its DataVersion; None keeps the
                queue data as it is.
            filter_servers: The broker's filter servers; None leaves them alone, empty clears them.
            now: Current time in seconds.
            connection_id: Identifies the connection the registration came on, so that closing
                it removes the broker (:meth:`remove_by_connection`).
        """
        self._clusters.setdefault(cluster, set()).add(broker_name)
        group = self._brokers.get(broker_name)
        first = group is None
        if group is None:
            group = self._brokers[broker_name] = _BrokerGroup(cluster, broker_name)
        elif group.cluster != cluster:
            log.warning("broker %s moved from cluster %s to %s", broker_name, group.cluster, cluster)
            self._discard_from_cluster(group.cluster, broker_name)
            group.cluster = cluster
        for other_id, addr in list(group.addrs.items()):
            if addr == broker_addr and other_id != broker_id:
                del group.addrs[other_id]  # same ip:port under a new id: a switched slave/master
        first = group.addrs.get(broker_id) is None or first
        group.addrs[broker_id] = broker_addr

        if topic_config_wrapper is not None and broker_id == MASTER_ID:
            version = topic_config_wrapper.data_version
            if first or self.is_topic_config_changed(broker_addr, version):
                for config in topic_config_wrapper.topic_config_table.values():
                    queue_data = QueueData(
                        broker_name=broker_name,
                        read_queue_nums=config.read_queue_nums,
                        write_queue_nums=config.write_queue_nums,
                        perm=config.perm,
                        topic_sys_flag=config.topic_sys_flag,
                    )
                    self._put_queue_data(config.topic_name, queue_data)

        previous = self._live.get(broker_addr)
        if topic_config_wrapper is not None:
            data_version = topic_config_wrapper.data_version
        else:
            data_version = previous.data_version if previous is not None else DataVersion()
        self._live[broker_addr] = BrokerLiveInfo(
            last_update_s=now, data_version=data_version, connection_id=connection_id, ha_server_addr=ha_server_addr
        )
        if previous is None:
            log.info("broker %s (%s) registered: cluster %s, id %d", broker_name, broker_addr, cluster, broker_id)

        if filter_servers is not None:
            if filter_servers:
                self._filter_servers[broker_addr] = list(filter_servers)
            else:
                self._filter_servers.pop(broker_addr, None)

        if broker_id != MASTER_ID:
            master_addr = group.addrs.get(MASTER_ID)
            master = self._live.get(master_addr) if master_addr is not None else None
            if master is not None:
                return RegisterResult(master_addr=master_addr, ha_server_addr=master.ha_server_addr)
        return RegisterResult()

    def _put_queue_data(self, topic: str, queue_data: QueueData) -> None:
        queues = self._topic_queues.setdefault(topic, {})
        old = queues.get(queue_data.broker_name)
        if old == queue_data:
            return
        queues[queue_data.broker_name] = queue_data
        if old is None:
            log.info("topic %s: new queue data from broker %s: %s", topic, queue_data.broker_name, queue_data)
        else:
            log.info("topic %s: queue data of broker %s changed: %s -> %s", topic, old.broker_name, old, queue_data)

    def is_topic_config_changed(self, broker_addr: str, data_version: DataVersion) -> bool:
        """True unless ``broker_addr`` is live and last reported exactly ``data_version``."""
        live = self._live.get(broker_addr)
        return live is None or live.data_version != data_version

    def data_version(self, broker_addr: str) -> DataVersion | None:
        """The DataVersion ``broker_addr`` last registered with, or None if it is not live."""
        live = self._live.get(broker_addr)
        return live.data_version if live is not None else None

    def touch(self, broker_addr: str, now: float) -> None:
        """Refresh a live broker's registration time (QUERY_DATA_VERSION with no change)."""
        live = self._live.get(broker_addr)
        if live is not None:
            live.last_update_s = now

    def live_info(self, broker_addr: str) -> BrokerLiveInfo | None:
        return self._live.get(broker_addr)

    # -- removal ----------------------------------------------------------------------------------

    def unregister_broker(
        self, *, cluster: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> RemovedBroker | None:
        """Remove one broker address (UNREGISTER_BROKER). Returns None if it was unknown."""
        live = self._live.pop(broker_addr, None)
        self._filter_servers.pop(broker_addr, None)
        group = self._brokers.get(broker_name)
        # Remove the id only if it still maps to this address: a late unregister from a broker
        # that has since been replaced under the same id must not drop its successor.
        removed_addr = group is not None and group.addrs.get(broker_id) == broker_addr
        if group is not None and removed_addr:
            del group.addrs[broker_id]
        if live is None and not removed_addr:
            return None
        group_removed = group is not None and not group.addrs
        if group is not None and group_removed:
            self._drop_group(group)
        log.info("broker %s (%s) unregistered from cluster %s", broker_name, broker_addr, cluster)
        return RemovedBroker(
            broker_addr=broker_addr,
            broker_name=broker_name,
            cluster=group.cluster if group is not None else cluster,
            connection_id=live.connection_id if live is not None else None,
            group_removed=group_removed,
        )

    def remove_by_connection(self, connection_id: int) -> list[RemovedBroker]:
        """Remove at once every broker whose last registration came on a now-closed connection."""
        addrs = [addr for addr, live in self._live.items() if live.connection_id == connection_id]
        return [self._remove_addr(addr) for addr in addrs]

    def scan_expired(self, now: float) -> list[RemovedBroker]:
        """Remove brokers that have not registered for longer than ``broker_expiry_s``."""
        deadline = now - self.broker_expiry_s
        addrs = [addr for addr, live in self._live.items() if live.last_update_s < deadline]
        return [self._remove_addr(addr) for addr in addrs]

    def _remove_addr(self, broker_addr: str) -> RemovedBroker:
        live = self._live.pop(broker_addr, None)
        self._filter_servers.pop(broker_addr, None)
        name: str | None = None
        cluster: str | None = None
        group_removed = False
        for group in list(self._brokers.values()):
            ids = [broker_id for broker_id, addr in group.addrs.items() if addr == broker_addr]
            if not ids:
                continue
            for broker_id in ids:
                del group.addrs[broker_id]
            name, cluster = group.name, group.cluster
            if not group.addrs:
                self._drop_group(group)
                group_removed = True
        return RemovedBroker(
            broker_addr=broker_addr,
            broker_name=name,
            cluster=cluster,
            connection_id=live.connection_id if live is not None else None,
            group_removed=group_removed,
        )

    def _drop_group(self, group: _BrokerGroup) -> None:
        """Forget a broker name that has no address left, with its queue data everywhere."""
        del self._brokers[group.name]
        self._discard_from_cluster(group.cluster, group.name)
        for topic in list(self._topic_queues):
            queues = self._topic_queues[topic]
            if queues.pop(group.name, None) is not None and not queues:
                del self._topic_queues[topic]
                log.info("topic %s removed: its last broker %s is gone", topic, group.name)
        log.info("broker %s removed from cluster %s", group.name, group.cluster)

    def _discard_from_cluster(self, cluster: str, broker_name: str) -> None:
        names = self._clusters.get(cluster)
        if names is not None:
            names.discard(broker_name)
            if not names:
                del self._clusters[cluster]

    # -- topics ---------------------------------------------------------------------------------------

    def pick_topic_route(self, topic: str) -> TopicRouteData | None:
        """The route of ``topic``, or None unless it has queue data on a known broker group."""
        queues = self._topic_queues.get(topic)
        if not queues:
            return None
        broker_datas: list[BrokerData] = []
        filter_table: dict[str, list[str]] = {}
        for broker_name in queues:
            group = self._brokers.get(broker_name)
            if group is None:
                continue
            broker_datas.append(group.to_broker_data())
            for addr in group.addrs.values():
                servers = self._filter_servers.get(addr)
                if servers:
                    filter_table[addr] = list(servers)
        if not broker_datas:
            return None
        return TopicRouteData(
            queue_datas=list(queues.values()), broker_datas=broker_datas, filter_server_table=filter_table
        )

    def all_topics(self) -> list[str]:
        return list(self._topic_queues)

    def topics_by_cluster(self, cluster: str) -> list[str]:
        """Topics with queues on at least one broker group of ``cluster``."""
        names = self._clusters.get(cluster, set())
        return [topic for topic, queues in self._topic_queues.items() if not names.isdisjoint(queues)]

    def topics_with_sys_flag(self, predicate: Callable[[int], bool]) -> list[str]:
        """Topics whose (first) queue data's ``topicSysFlag`` satisfies ``predicate``."""
        return [
            topic
            for topic, queues in self._topic_queues.items()
            if queues and predicate(next(iter(queues.values())).topic_sys_flag)
        ]

    def delete_topic(self, topic: str, cluster: str | None = None) -> bool:
        """Forget ``topic``, or only its queues on ``cluster``'s brokers. True if anything went."""
        queues = self._topic_queues.get(topic)
        if queues is None:
            return False
        if not cluster:
            del self._topic_queues[topic]
            log.info("topic %s deleted", topic)
            return True
        removed = [name for name in self._clusters.get(cluster, set()) if queues.pop(name, None) is not None]
        if not queues:
            del self._topic_queues[topic]
        if removed:
            log.info("topic %s deleted from cluster %s (brokers %s)", topic, cluster, ", ".join(sorted(removed)))
        return bool(removed)

    def wipe_write_perm(self, broker_name: str) -> int:
        """Clear the write bit of every queue data of ``broker_name``; returns how many topics."""
        return self._update_perm(broker_name, lambda perm: perm & ~PERM_WRITE)

    def add_write_perm(self, broker_name: str) -> int:
        """Give ``broker_name``'s queue data read and write permission; returns how many topics."""
        return self._update_perm(broker_name, lambda perm: PERM_READ | PERM_WRITE)

    def _update_perm(self, broker_name: str, change: Callable[[int], int]) -> int:
        count = 0
        for queues in self._topic_queues.values():
            old = queues.get(broker_name)
            if old is not None:
                queues[broker_name] = QueueData(
                    broker_name=old.broker_name,
                    read_queue_nums=old.read_queue_nums,
                    write_queue_nums=old.write_queue_nums,
                    perm=change(old.perm),
                    topic_sys_flag=old.topic_sys_flag,
                )
                count += 1
        return count

    # -- clusters ---------------------------------------------------------------------------------

    def cluster_info(self) -> ClusterInfo:
        return ClusterInfo(
            broker_addr_table={name: group.to_broker_data() for name, group in self._brokers.items()},
            cluster_addr_table={cluster: sorted(names) for cluster, names in self._clusters.items()},
        )

    def system_topics(self) -> TopicList:
        """Cluster and broker names (topics every broker creates), plus one broker address."""
        topics: list[str] = []
        for cluster, names in self._clusters.items():
            topics.append(cluster)
            topics.extend(sorted(names))
        broker_addr = next((addr for group in self._brokers.values() for addr in group.addrs.values()), None)
        return TopicList(topic_list=_unique(topics), broker_addr=broker_addr)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
