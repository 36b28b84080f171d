"""Admin requests: topics (17, 215, 21), a topic's queue offsets (202), runtime info (28), replication
status (907), a group's producers (204), traffic stats (315) and cleaning expired ConsumeQueue files (306), used by
``rocketq admin`` and Java's mqadmin."""

from __future__ import annotations

import asyncio
import json
import logging

from rocketq.broker.context import BrokerContext, parsed, reply
from rocketq.broker.handlers.consumers import client_connection
from rocketq.broker.runtime_info import ha_runtime_info, runtime_table, stats_key, traffic_counters
from rocketq.broker.runtime_stats import STATS_WINDOWS
from rocketq.broker.topic_config import PERM_READ, PERM_WRITE, topic_name_problem_in_cluster
from rocketq.protocol import (
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicConfig,
    TopicFilterType,
)
from rocketq.protocol.bodies import QueueStats, TopicStatsTable
from rocketq.protocol.broker_stats import (
    BrokerStatsData,
    BrokerStatsItem,
    GetProducerConnectionListRequestHeader,
    ProducerConnection,
    ViewBrokerStatsDataRequestHeader,
)
from rocketq.protocol.headers import (
    CreateTopicRequestHeader,
    DeleteTopicRequestHeader,
    GetTopicStatsInfoRequestHeader,
)
from rocketq.remoting import Connection, RequestHandler

log = logging.getLogger(__name__)


def handlers(context: BrokerContext) -> dict[int, RequestHandler]:
    topics = context.topics

    async def create_topic(request: RemotingCommand, header: CreateTopicRequestHeader) -> RemotingCommand:
        problem = topic_name_problem_in_cluster(header.topic, context.config.broker_cluster_name)
        if problem:
            return reply(request, ResponseCode.SYSTEM_ERROR, problem)
        if header.topic in topics.system_topics:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"the topic[{header.topic}] is a system topic")
        if header.read_queue_nums <= 0 or header.write_queue_nums <= 0 or header.read_queue_nums > 1024:
            return reply(request, ResponseCode.SYSTEM_ERROR, "queue numbers must be in 1..1024")
        try:
            filter_type = TopicFilterType(header.topic_filter_type or "SINGLE_TAG")
        except ValueError:
            filter_type = TopicFilterType.SINGLE_TAG
        config = TopicConfig(
            topic_name=header.topic,
            read_queue_nums=header.read_queue_nums,
            write_queue_nums=header.write_queue_nums,
            perm=header.perm if header.perm else PERM_READ | PERM_WRITE,
            topic_filter_type=filter_type,
            topic_sys_flag=header.topic_sys_flag or 0,
            order=header.order,
        )
        if topics.put(config):
            await context.register_now()  # like Java: the route is updated when the request returns
        return reply(request, ResponseCode.SUCCESS)

    async def delete_topic(request: RemotingCommand, header: DeleteTopicRequestHeader) -> RemotingCommand:
        if header.topic in topics.system_topics:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"the topic[{header.topic}] is a system topic")
        topics.delete(header.topic)
        context.offsets.remove_topic(header.topic)
        context.store.delete_topic(header.topic)
        await context.register_now()
        log.info("topic %s deleted", header.topic)
        return reply(request, ResponseCode.SUCCESS)

    async def all_topic_config(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        return reply(request, ResponseCode.SUCCESS, body=topics.wrapper().encode())

    async def topic_stats(request: RemotingCommand, header: GetTopicStatsInfoRequestHeader) -> RemotingCommand:
        """Each write queue's min and max offset and its last message's store time (0: none), as Java's
        AdminBrokerProcessor answers it."""
        config = topics.get(header.topic)
        if config is None:
            return reply(request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{header.topic}] not exist")
        store, rows = context.store, []
        for queue_id in range(config.write_queue_nums):
            high = max(0, store.get_max_offset_in_queue(header.topic, queue_id))
            last = store.get_message_store_timestamp(header.topic, queue_id, high - 1) if high > 0 else None
            rows.append(
                QueueStats(
                    topic=header.topic,
                    broker_name=context.config.broker_name,
                    queue_id=queue_id,
                    min_offset=max(0, store.get_min_offset_in_queue(header.topic, queue_id)),
                    max_offset=high,
                    last_update_timestamp=last or 0,
                )
            )
        return reply(request, ResponseCode.SUCCESS, body=TopicStatsTable(offset_table=rows).encode())

    async def runtime_info(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        table = runtime_table(context)
        return reply(request, ResponseCode.SUCCESS, body=json.dumps({"table": table}).encode())

    async def ha_status(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        state = context.replication_state
        if state is None:
            return reply(request, ResponseCode.SYSTEM_ERROR, "this broker has no replication state yet")
        return reply(request, ResponseCode.SUCCESS, body=ha_runtime_info(state()).encode())

    def producer_connections(
        request: RemotingCommand, header: GetProducerConnectionListRequestHeader
    ) -> RemotingCommand:
        channels = context.clients.producers.get(header.producer_group) or {}
        if not channels:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"the producer group[{header.producer_group}] not exist")
        connections = [client_connection(channel) for channel in channels.values()]
        body = ProducerConnection(connection_set=sorted(connections, key=lambda c: c.client_id)).encode()
        return reply(request, ResponseCode.SUCCESS, body=body)

    def stats_data(request: RemotingCommand, header: ViewBrokerStatsDataRequestHeader) -> RemotingCommand:
        key = stats_key(header.stats_name, header.stats_key)
        current = traffic_counters(context).get(key)
        windows = context.stats_windows
        if current is None and not windows.known(key):
            return reply(
                request, ResponseCode.SYSTEM_ERROR, f"The stats <{header.stats_name}> <{header.stats_key}> not exist"
            )
        now = context.clock.time()
        items = {}
        for name, _, _ in STATS_WINDOWS:
            total, tps = windows.window(name, key, now, current or 0)
            items[name] = BrokerStatsItem(sum=total, tps=round(tps, 2))
        body = BrokerStatsData(stats_minute=items["minute"], stats_hour=items["hour"], stats_day=items["day"])
        return reply(request, ResponseCode.SUCCESS, body=body.encode())

    async def clean_expired_consume_queues(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        """ConsumeQueue files pointing only below the CommitLog's first offset, deleted; how many in the
        rocketq-only ext field ``deletedFiles`` (RocketMQ's tools read the code only)."""
        deleted = await asyncio.to_thread(context.store.clean_expired_consume_queues)
        log.info("clean expired consume queues: %d file(s) deleted", deleted)
        return reply(request, ResponseCode.SUCCESS, ext_fields={"deletedFiles": str(deleted)})

    return {
        RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE: clean_expired_consume_queues,
        RequestCode.VIEW_BROKER_STATS_DATA: parsed(ViewBrokerStatsDataRequestHeader, stats_data),
        RequestCode.GET_PRODUCER_CONNECTION_LIST: parsed(GetProducerConnectionListRequestHeader, producer_connections),
        RequestCode.UPDATE_AND_CREATE_TOPIC: parsed(CreateTopicRequestHeader, create_topic),
        RequestCode.DELETE_TOPIC_IN_BROKER: parsed(DeleteTopicRequestHeader, delete_topic),
        RequestCode.GET_ALL_TOPIC_CONFIG: all_topic_config,
        RequestCode.GET_TOPIC_STATS_INFO: parsed(GetTopicStatsInfoRequestHeader, topic_stats),
        RequestCode.GET_BROKER_RUNTIME_INFO: runtime_info,
        RequestCode.GET_BROKER_HA_STATUS: ha_status,
    }
