"""AdminClient: the operations behind ``rocketq admin`` (RocketMQ's MQAdminExt), async."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from rocketq.client.admin_queries import DEFAULT_QUERY_MAX_NUM as DEFAULT_QUERY_MAX_NUM
from rocketq.client.admin_queries import DEFAULT_TIME_QUERY_MAX_NUM as DEFAULT_TIME_QUERY_MAX_NUM
from rocketq.client.admin_queries import PULL_BATCH as PULL_BATCH
from rocketq.client.admin_queries import AdminQueries
from rocketq.client.errors import MQClientError, RouteNotFoundError, ValidationError, broker_error
from rocketq.client.message import MessageQueue
from rocketq.client.route import MASTER_ID, PERM_READ, PERM_WRITE
from rocketq.common.group_topics import RETRY_PREFIX
from rocketq.common.group_topics import TOOLS_CONSUMER_GROUP as TOOLS_CONSUMER_GROUP
from rocketq.protocol import (
    RequestCode,
    ResponseCode,
    make_request,
)
from rocketq.protocol.bodies import (
    ConsumerConnection,
    ConsumeStats,
    MessageQueueOffset,
    QueueConsumeStats,
    ResetOffsetBody,
    SubscriptionGroupConfigBody,
    TopicStatsTable,
)
from rocketq.protocol.headers import (
    CreateTopicRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetTopicStatsInfoRequestHeader,
    ResetOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.protocol.namesrv_headers import DeleteTopicFromNamesrvRequestHeader
from rocketq.protocol.transactions import PendingTransactions
from rocketq.remoting.connection import next_opaque


@dataclass(frozen=True, slots=True)
class QueueStatus:
    queue: MessageQueue
    min_offset: int
    max_offset: int
    last_update_timestamp: int | None


@dataclass(frozen=True, slots=True)
class GroupOverview:
    """One consumer group at a glance (``consumerProgress`` without a group)."""

    group: str
    members: int  # online now
    version: int | None  # the oldest member's MQVersion ordinal; None when none is online
    consume_type: str | None  # CONSUME_PASSIVELY (push) or CONSUME_ACTIVELY (pull), when online
    message_model: str | None  # CLUSTERING or BROADCASTING, when online
    consume_tps: float  # messages a second the group took in the last minute
    lag: int  # messages behind, summed over every queue it has committed an offset for


class AdminClient(AdminQueries):
    """``access_key``/``secret_key``: an account of the brokers' ACL (an admin one to create or delete
    topics and groups and to reset offsets); requests are unsigned without them.

    Its operations live by concern: requests and routes in :class:`AdminConnection`
    (``rocketq.client.admin_connection``), message queries in :class:`AdminQueries`
    (``rocketq.client.admin_queries``), topics and consumer groups here."""

    # -- topics ---------------------------------------------------------------------------------------

    async def update_topic(
        self,
        topic: str,
        *,
        cluster: str | None = None,
        broker_addr: str | None = None,
        read_queues: int = 8,
        write_queues: int = 8,
        perm: int = PERM_READ | PERM_WRITE,
        order: bool = False,
    ) -> list[str]:
        """Create or update a topic on one broker or every master of a cluster; returns the brokers."""
        targets = [broker_addr] if broker_addr else list((await self.master_addresses(cluster)).values())
        if not targets:
            raise MQClientError("no broker to create the topic on")
        fields = CreateTopicRequestHeader(
            topic=topic,
            default_topic="TBW102",
            read_queue_nums=read_queues,
            write_queue_nums=write_queues,
            perm=perm,
            topic_filter_type="SINGLE_TAG",
            order=order,
        ).to_ext_fields()
        for address in targets:
            await self._broker(address, RequestCode.UPDATE_AND_CREATE_TOPIC, fields)
        return targets

    async def delete_topic(self, topic: str, *, cluster: str | None = None) -> list[str]:
        """Delete a topic on every master broker (of ``cluster``), then from the name servers. A broker
        that refuses (NO_PERMISSION under ACL) stops it there: the name servers are not asked, as they
        check nothing themselves (RocketMQ's do not either)."""
        targets = list((await self.master_addresses(cluster)).values())
        for address in targets:
            await self._broker(
                address, RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic=topic).to_ext_fields()
            )
        await self._namesrv(
            RequestCode.DELETE_TOPIC_IN_NAMESRV,
            DeleteTopicFromNamesrvRequestHeader(topic=topic, cluster_name=cluster).to_ext_fields(),
        )
        return targets

    async def broker_runtime_info(self, address: str) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO of the broker at ``address``: its ``table`` of named statistics."""
        response = await self._broker(address, RequestCode.GET_BROKER_RUNTIME_INFO, {})
        table = json.loads(bytes(response.body))["table"]
        return {str(key): str(value) for key, value in table.items()}

    async def topic_status(self, topic: str) -> list[QueueStatus]:
        """Every queue's offsets and last store time, from each master of the topic (GET_TOPIC_STATS_INFO)."""
        route = await self.topic_route(topic)
        fields = GetTopicStatsInfoRequestHeader(topic=topic).to_ext_fields()
        statuses: list[QueueStatus] = []
        for broker in route.broker_datas:
            address = broker.broker_addrs.get(MASTER_ID)
            if address is None:
                continue
            response = await self._broker(address, RequestCode.GET_TOPIC_STATS_INFO, fields)
            statuses.extend(
                QueueStatus(
                    MessageQueue(row.topic, row.broker_name, row.queue_id),
                    row.min_offset,
                    row.max_offset,
                    row.last_update_timestamp or None,
                )
                for row in TopicStatsTable.decode(response.body).offset_table
            )
        return sorted(statuses, key=lambda status: (status.queue.broker_name, status.queue.queue_id))

    async def pending_transactions(self, cluster: str | None = None) -> dict[str, PendingTransactions]:
        """Each master's pending half messages per producer group, by broker name (a rocketq broker's
        GET_PENDING_TRANSACTIONS; RocketMQ's brokers do not answer it)."""
        pending: dict[str, PendingTransactions] = {}
        for name, address in sorted((await self.master_addresses(cluster)).items()):
            response = await self._broker(address, RequestCode.GET_PENDING_TRANSACTIONS, {})
            pending[name] = PendingTransactions.decode(response.body)
        return pending

    # -- consumer groups ------------------------------------------------------------------------------

    async def consume_stats(self, group: str, topic: str | None = None) -> ConsumeStats:
        """Per queue: broker offset, the group's committed offset, the last consumed message's time; and
        the group's consume TPS over the last minute. From every master, merged."""
        return await self._consume_stats(await self.master_addresses(), group, topic)

    async def _consume_stats(self, masters: dict[str, str], group: str, topic: str | None) -> ConsumeStats:
        fields = GetConsumeStatsRequestHeader(consumer_group=group, topic=topic).to_ext_fields()
        rows: list[QueueConsumeStats] = []
        tps = 0.0
        for address in masters.values():
            response = await self._broker(address, RequestCode.GET_CONSUME_STATS, fields)
            stats = ConsumeStats.decode(response.body)
            rows.extend(stats.offset_table)
            tps += stats.consume_tps
        rows.sort(key=lambda r: (r.topic, r.broker_name, r.queue_id))
        return ConsumeStats(offset_table=rows, consume_tps=tps)

    async def consumer_progress(self, group: str, topic: str | None = None) -> list[QueueConsumeStats]:
        """Per queue: broker offset, the group's committed offset, and the last consumed message's time."""
        return (await self.consume_stats(group, topic)).offset_table

    async def consumer_groups(self) -> list[str]:
        """The consumer groups the name servers know of: the groups of the ``%RETRY%`` topics, which a
        broker creates when a member of a group first heartbeats (where RocketMQ's consumerProgress
        looks for them too)."""
        topics = await self.topic_list()
        return sorted(topic.removeprefix(RETRY_PREFIX) for topic in topics if topic.startswith(RETRY_PREFIX))

    async def groups_overview(self) -> list[GroupOverview]:
        """Every consumer group (``consumer_groups``): members online, their kind, consume TPS, total lag.
        The masters are looked up once for all of them."""
        masters = await self.master_addresses()
        overviews = []
        for group in await self.consumer_groups():
            connection = await self._online_members(masters, group)
            stats = await self._consume_stats(masters, group, None)
            lag = sum(max(0, row.broker_offset - row.consumer_offset) for row in stats.offset_table)
            if connection is None or not connection.connection_set:
                overviews.append(GroupOverview(group, 0, None, None, None, stats.consume_tps, lag))
                continue
            overviews.append(
                GroupOverview(
                    group,
                    len(connection.connection_set),
                    min(member.version for member in connection.connection_set),
                    connection.consume_type.value,
                    connection.message_model.value,
                    stats.consume_tps,
                    lag,
                )
            )
        return overviews

    async def consumer_connection(self, group: str) -> ConsumerConnection:
        """The group's online members and subscriptions (from the first broker that knows them)."""
        connection = await self._online_members(await self.master_addresses(), group)
        if connection is None:
            raise MQClientError(f"consumer group {group!r} has no member online")
        return connection

    async def _online_members(self, masters: dict[str, str], group: str) -> ConsumerConnection | None:
        """The first broker's answer that knows the group's members; None when every broker says none
        is online."""
        fields = GetConsumerConnectionListRequestHeader(consumer_group=group).to_ext_fields()
        for address in masters.values():
            response = await self._broker(
                address, RequestCode.GET_CONSUMER_CONNECTION_LIST, fields, ok=(0, ResponseCode.CONSUMER_NOT_ONLINE)
            )
            if response.code == ResponseCode.SUCCESS:
                return ConsumerConnection.decode(response.body)
        return None

    async def commit_offsets(self, group: str, offsets: Mapping[MessageQueue, int]) -> None:
        """Store ``group``'s offsets of these queues on their master brokers, as its members commit them
        (the offset of the next message to consume); ``consumerProgress`` then shows the group's lag.
        The group needs no member online. Raises when a broker refuses or cannot be reached."""
        for queue, offset in sorted(offsets.items()):
            if offset < 0:
                raise ValidationError(f"{queue}: an offset to commit must be 0 or more, not {offset}")
            address = await self._instance.find_master(queue.topic, queue.broker_name)
            if address is None:
                raise RouteNotFoundError(f"{queue}: broker {queue.broker_name} has no master in the topic's route")
            fields = UpdateConsumerOffsetRequestHeader(
                consumer_group=group, topic=queue.topic, queue_id=queue.queue_id, commit_offset=offset
            ).to_ext_fields()
            await self._broker(address, RequestCode.UPDATE_CONSUMER_OFFSET, fields)

    async def reset_offset_by_time(
        self, group: str, topic: str, timestamp_ms: int, *, force: bool = True
    ) -> list[MessageQueueOffset]:
        """Move the group's offsets of ``topic`` to ``timestamp_ms`` on every broker; online members
        are told and continue from there. Returns the new offsets."""
        route = await self.topic_route(topic)
        fields = ResetOffsetRequestHeader(
            topic=topic, group=group, timestamp=timestamp_ms, is_force=force
        ).to_ext_fields()
        offsets: list[MessageQueueOffset] = []
        for broker in route.broker_datas:
            address = broker.broker_addrs.get(MASTER_ID)
            if address is not None:
                response = await self._broker(address, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, fields)
                offsets.extend(ResetOffsetBody.decode(response.body).offset_table)
        return sorted(offsets, key=lambda o: (o.broker_name, o.queue_id))

    async def update_subscription_group(
        self, config: SubscriptionGroupConfigBody, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[str]:
        """Create or change a consumer group's settings on one broker, or on every master of a cluster
        (all clusters by default); returns the brokers."""
        targets = [broker_addr] if broker_addr else list((await self.master_addresses(cluster)).values())
        request_body = config.encode()
        for address in targets:
            response = await self._instance.invoke_broker(
                address,
                make_request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, opaque=next_opaque(), body=request_body),
                self._timeout,
            )
            if response.code != ResponseCode.SUCCESS:
                raise broker_error(response.code, response.remark, address)
        return targets
