"""``statsAll``: each topic's messages in and out (per consumer group) over the last minute and day,
from the masters' VIEW_BROKER_STATS_DATA (315), and each group's backlog from GET_CONSUME_STATS."""

from __future__ import annotations

from dataclasses import dataclass

from rocketq.client.admin import AdminClient
from rocketq.client.route import MASTER_ID
from rocketq.common.group_topics import DLQ_PREFIX, RETRY_PREFIX
from rocketq.protocol import RequestCode, ResponseCode
from rocketq.protocol.broker_stats import BrokerStatsData, ViewBrokerStatsDataRequestHeader


@dataclass(frozen=True, slots=True)
class TopicTraffic:
    """One row of statsAll: a topic and one of its consumer groups (None: it has none)."""

    topic: str
    group: str | None
    accumulation: int  # messages the group has not consumed yet
    in_tps: float  # messages put a second, over the last minute
    out_tps: float  # messages the group got a second, over the last minute
    in_today: int  # messages put in the last 24 hours
    out_today: int  # messages the group got in the last 24 hours


async def _stats(admin: AdminClient, masters: list[str], name: str, key: str) -> tuple[float, int]:
    """(minute TPS, day sum) of one stats item, summed over ``masters``; a broker without it adds 0."""
    fields = ViewBrokerStatsDataRequestHeader(stats_name=name, stats_key=key).to_ext_fields()
    tps, total = 0.0, 0
    for address in masters:
        response = await admin.request_broker(
            address, RequestCode.VIEW_BROKER_STATS_DATA, fields, ok=(0, ResponseCode.SYSTEM_ERROR)
        )
        if response.code == ResponseCode.SUCCESS:
            data = BrokerStatsData.decode(response.body)
            tps += data.stats_minute.tps
            total += data.stats_day.sum
    return tps, total


async def stats_all(admin: AdminClient, topic: str | None = None) -> list[TopicTraffic]:
    """A row per topic and consumer group (every topic but the retry and dead-letter ones, or ``topic``)."""
    topics = [topic] if topic else [t for t in await admin.topic_list() if not t.startswith((RETRY_PREFIX, DLQ_PREFIX))]
    rows: list[TopicTraffic] = []
    for name in topics:
        route = await admin.topic_route(name)
        masters = [b.broker_addrs[MASTER_ID] for b in route.broker_datas if MASTER_ID in b.broker_addrs]
        in_tps, in_today = await _stats(admin, masters, "TOPIC_PUT_NUMS", name)
        groups = await admin.groups_consuming(name)
        if not groups:
            rows.append(TopicTraffic(name, None, 0, in_tps, 0.0, in_today, 0))
        for group in groups:
            stats = await admin.consume_stats(group, name)
            backlog = sum(max(0, r.broker_offset - r.consumer_offset) for r in stats.offset_table)
            out_tps, out_today = await _stats(admin, masters, "GROUP_GET_NUMS", f"{name}@{group}")
            rows.append(TopicTraffic(name, group, backlog, in_tps, out_tps, in_today, out_today))
    return rows
