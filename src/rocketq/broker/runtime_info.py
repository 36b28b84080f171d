"""The table GET_BROKER_RUNTIME_INFO (28) answers: RocketMQ's keys in RocketMQ's formats, so
``mqadmin brokerStatus``/``clusterList`` and the RocketMQ Dashboard read a rocketq broker, then the
store's own statistics under rocketq's names (``put_bytes``, ``dispatched_offset``, ...; ``rocketq bench``
reads them) and ``brokerRole`` (ASYNC_MASTER, SYNC_MASTER or SLAVE, as in broker.conf). Also the
HARuntimeInfo of GET_BROKER_HA_STATUS (907), from the broker's ``ReplicationState``.

rocketq answers sends and pulls on its event loop rather than from thread pools, so the thread-pool
keys (``sendThreadPoolQueueSize``, ``pullThreadPoolQueueSize``, ...) say that no request waits in such
a queue: 0, and head wait times of 0 ms. The page cache is never locked for a put (0 ms).
"""

from __future__ import annotations

from rocketq.broker.context import BrokerContext
from rocketq.broker.runtime_stats import human_bytes, java_double, runtime_text
from rocketq.protocol.command import DEFAULT_VERSION
from rocketq.protocol.ha_status import HAClientRuntimeInfo, HAConnectionRuntimeInfo, HARuntimeInfo
from rocketq.replication.state import ReplicationState

PUT, FOUND, MISSED, TRANSFERRED, PUT_TODAY = "put", "found", "missed", "transferred", "putToday"


VERSION_DESC = "V4_9_8"
"""RocketMQ's name of the version rocketq announces (``DEFAULT_VERSION``, MQVersion ordinal 409)."""


def _put_today(context: BrokerContext) -> int:
    """Messages producers stored, system topics left out (RocketMQ's msgPutTotalTodayNow)."""
    system_topics = context.topics.system_topics
    return sum(n for topic, n in context.put_traffic.messages.items() if topic not in system_topics)


def sample_runtime(context: BrokerContext) -> None:
    """Add the counters behind the rates, as of the broker's clock now."""
    pulls = context.pull_counters
    counters = {
        PUT: context.store.stats().put_messages,
        FOUND: pulls.found,
        MISSED: pulls.missed,
        TRANSFERRED: pulls.transferred,
        PUT_TODAY: _put_today(context),
    }
    now = context.clock.time()
    context.runtime_samples.sample(now, counters)
    if context.stats_windows.due(now):
        context.stats_windows.sample(now, traffic_counters(context))


TOPIC_PUT_NUMS, GROUP_GET_NUMS = "TOPIC_PUT_NUMS", "GROUP_GET_NUMS"


def traffic_counters(context: BrokerContext) -> dict[str, int]:
    """Messages put per topic and got per topic and group, keyed as VIEW_BROKER_STATS_DATA names them
    (``stats_key(TOPIC_PUT_NUMS, topic)``, ``stats_key(GROUP_GET_NUMS, "topic@group")``)."""
    counters = {stats_key(TOPIC_PUT_NUMS, topic): n for topic, n in context.put_traffic.messages.items()}
    for (group, topic), n in context.consume_rates.totals.items():
        counters[stats_key(GROUP_GET_NUMS, f"{topic}@{group}")] = n
    return counters


def stats_key(name: str, key: str) -> str:
    return f"{name}/{key}"


def runtime_table(context: BrokerContext) -> dict[str, str]:
    """Every key of the answer, each value a string as on the wire."""
    store, samples = context.store, context.runtime_samples
    stats = store.stats()
    now_ms = int(context.clock.time() * 1000)
    earliest = store.lookup_message(stats.commit_log_min_offset) if stats.commit_log_max_offset > 0 else None
    put_today = _put_today(context)
    get_today = context.pull_counters.transferred
    puts = max(1, stats.put_messages)
    table = {
        "brokerVersion": str(DEFAULT_VERSION),
        "brokerVersionDesc": VERSION_DESC,
        "bootTimestamp": str(context.boot_ms),
        "runtime": runtime_text(now_ms - context.boot_ms),
        "putTps": samples.tps_text(PUT),
        "getFoundTps": samples.tps_text(FOUND),
        "getMissTps": samples.tps_text(MISSED),
        "getTotalTps": samples.tps_text(FOUND, MISSED),
        "getTransferedTps": samples.tps_text(TRANSFERRED),  # RocketMQ 4.x's spelling
        "getTransferredTps": samples.tps_text(TRANSFERRED),  # and 5.x's
        "putMessageTimesTotal": str(stats.put_messages),
        "putMessageSizeTotal": str(stats.put_bytes),
        "putMessageAverageSize": java_double(stats.put_bytes / puts),
        "putMessageEntireTimeMax": str(int(stats.put_latency_ms_max)),
        "msgPutTotalTodayNow": str(put_today),
        "msgPutTotalTodayMorning": str(samples.today_morning.get(PUT_TODAY, 0)),
        "msgPutTotalYesterdayMorning": str(samples.yesterday_morning.get(PUT_TODAY, 0)),
        "msgGetTotalTodayNow": str(get_today),
        "msgGetTotalTodayMorning": str(samples.today_morning.get(TRANSFERRED, 0)),
        "msgGetTotalYesterdayMorning": str(samples.yesterday_morning.get(TRANSFERRED, 0)),
        "commitLogDiskRatio": java_double(stats.disk_used_ratio),
        "commitLogMinOffset": str(stats.commit_log_min_offset),
        "commitLogMaxOffset": str(stats.commit_log_max_offset),
        "dispatchBehindBytes": str(max(0, stats.commit_log_max_offset - stats.dispatched_offset)),
        "remainHowManyDataToFlush": human_bytes(max(0, stats.commit_log_max_offset - stats.commit_log_flushed_offset)),
        "earliestMessageTimeStamp": str(earliest.store_timestamp if earliest is not None else -1),
        "pageCacheLockTimeMills": "0",
        "brokerActive": "true",
        "brokerRole": context.config.broker_role.value,  # rocketq's: RocketMQ's tools read it from the config
    }
    for pool in ("send", "pull", "query"):
        table[f"{pool}ThreadPoolQueueSize"] = "0"
        table[f"{pool}ThreadPoolQueueHeadWaitTimeMills"] = "0"
    table.update({key: str(value) for key, value in stats.as_dict().items()})
    if context.idempotent_sends is not None:
        table.update(context.idempotent_sends.stats())
    return table


def ha_runtime_info(state: ReplicationState) -> HARuntimeInfo:
    """GET_BROKER_HA_STATUS's answer: a master's slaves, or a slave's view of its master."""
    if state.role == "SLAVE":
        client = HAClientRuntimeInfo(
            master_addr=state.master_address or "",
            transferred_byte_in_second=state.transferred_per_s,
            max_offset=state.max_offset,
            last_read_timestamp=state.last_read_ms,
            last_write_timestamp=state.last_write_ms,
            is_activated=state.connected,
        )
        return HARuntimeInfo(master=False, ha_client_runtime_info=client)
    connections = [
        HAConnectionRuntimeInfo(
            addr=slave.address,
            slave_ack_offset=slave.acked_offset,
            diff=slave.lag_bytes,
            in_sync=slave.in_sync,
            transferred_byte_in_second=slave.transferred_per_s,
            transfer_from_where=slave.transfer_from,
        )
        for slave in state.slaves
    ]
    return HARuntimeInfo(
        master=True,
        master_commit_log_max_offset=state.max_offset,
        in_sync_slave_nums=sum(1 for slave in state.slaves if slave.in_sync),
        ha_connection_info=connections,
    )
