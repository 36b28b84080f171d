"""AdminClient: the operations behind ``rocketq admin`` (RocketMQ's MQAdminExt), async."""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass
from typing import Any

from rocketq.client.config import ClientConfig
from rocketq.client.errors import MQClientError, broker_error
from rocketq.client.instance import ClientInstance
from rocketq.client.message import MessageExt, MessageQueue, decode_messages
from rocketq.client.route import MASTER_ID, PERM_READ, PERM_WRITE
from rocketq.common.group_topics import RETRY_PREFIX, dlq_topic, retry_topic
from rocketq.common.message import SCHEDULE_TOPIC, Property
from rocketq.common.message_id import parse_offset_message_id
from rocketq.protocol import (
    ClusterInfo,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicList,
    TopicRouteData,
    make_request,
)
from rocketq.protocol.bodies import (
    ConsumerConnection,
    ConsumeStats,
    GroupList,
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
    QueryMessageRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
    ViewMessageRequestHeader,
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


class AdminClient:
    def __init__(self, namesrv_addr: str, *, timeout_s: float = 5.0) -> None:
        self._instance = ClientInstance(ClientConfig(namesrv_addr=namesrv_addr, instance_name="admin"))
        self._timeout = timeout_s

    async def __aenter__(self) -> AdminClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._instance.aclose()

    async def _namesrv(self, code: int, fields: dict[str, str] | None = None) -> RemotingCommand:
        response = await self._instance.invoke_namesrv(
            make_request(code, opaque=next_opaque(), ext_fields=fields or {}), self._timeout
        )
        if response.code != ResponseCode.SUCCESS:
            raise broker_error(response.code, response.remark, "name server")
        return response

    async def _broker(
        self, address: str, code: int, fields: dict[str, str], *, ok: tuple[int, ...] = (0,)
    ) -> RemotingCommand:
        response = await self._instance.invoke_broker(
            address, make_request(code, opaque=next_opaque(), ext_fields=fields), self._timeout
        )
        if response.code not in ok:
            raise broker_error(response.code, response.remark, address)
        return response

    # -- cluster and routes ---------------------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo:
        return ClusterInfo.decode((await self._namesrv(RequestCode.GET_BROKER_CLUSTER_INFO)).body)

    async def topic_list(self) -> list[str]:
        return sorted(
            TopicList.decode((await self._namesrv(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)).body).topic_list
        )

    async def topic_route(self, topic: str) -> TopicRouteData:
        route = await self._instance.fetch_route(topic)
        if route is None:
            raise MQClientError(f"no route for topic {topic!r}: the name servers do not know it")
        return route

    async def master_addresses(self, cluster: str | None = None) -> dict[str, str]:
        """broker name -> master address, for one cluster or all."""
        info = await self.cluster_info()
        names = set(info.cluster_addr_table.get(cluster, [])) if cluster else set(info.broker_addr_table)
        if cluster and not names:
            raise MQClientError(f"cluster {cluster!r} is unknown to the name servers")
        return {
            name: data.broker_addrs[MASTER_ID]
            for name, data in info.broker_addr_table.items()
            if name in names and MASTER_ID in data.broker_addrs
        }

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
        """Delete a topic on every master broker (of ``cluster``) and from the name servers."""
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

    # -- messages -------------------------------------------------------------------------------------

    async def view_message(self, offset_msg_id: str) -> MessageExt:
        """The message with this offset id (as returned by a send: ``offset_msg_id``)."""
        host, port, offset = parse_offset_message_id(offset_msg_id)
        response = await self._broker(
            f"{host}:{port}", RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=offset).to_ext_fields()
        )
        messages = decode_messages(response.body)
        if not messages:
            raise MQClientError(f"no message {offset_msg_id}")
        return messages[0]

    async def query_by_key(
        self,
        topic: str,
        key: str,
        *,
        max_num: int = 32,
        begin_ms: int = 0,
        end_ms: int | None = None,
        unique: bool = False,
    ) -> list[MessageExt]:
        """Messages of ``topic`` with this key (KEYS entry, or UNIQ_KEY when ``unique``), from every master."""
        route = await self.topic_route(topic)
        header = QueryMessageRequestHeader(
            topic=topic,
            key=key,
            max_num=max_num,
            begin_timestamp=begin_ms,
            end_timestamp=end_ms if end_ms is not None else int(time.time() * 1000) + 60_000,
        )
        fields: dict[str, Any] = header.to_ext_fields()
        if unique:
            fields["_UNIQUE_KEY_QUERY"] = "true"
        found: list[MessageExt] = []
        for broker in route.broker_datas:
            address = broker.broker_addrs.get(MASTER_ID)
            if address is None:
                continue
            response = await self._broker(
                address, RequestCode.QUERY_MESSAGE, fields, ok=(0, ResponseCode.QUERY_NOT_FOUND)
            )
            if response.code == ResponseCode.SUCCESS:
                found.extend(decode_messages(response.body))
        if unique:
            found = [m for m in found if m.msg_id == key]
        return sorted(found, key=lambda m: m.store_timestamp)

    async def query_by_id(self, topic: str | None, msg_id: str, *, with_retries: bool = True) -> list[MessageExt]:
        """By the client's unique id (UNIQ_KEY) in ``topic``, else as an offset id (no topic needed).
        ``with_retries``: also the message's copies, found by its unique id, in the retry and dead-letter
        topics of every group consuming its topic and in the delay topic (retries not yet due), all in
        store order."""
        found = await self.query_by_key(topic, msg_id, unique=True) if topic else []
        if not found:
            try:
                found = [await self.view_message(msg_id)]
            except MQClientError:
                return []
        if not with_retries:
            return found
        unique_id = found[0].properties.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        if unique_id is None:  # no client id to follow it by
            return found
        places = [SCHEDULE_TOPIC]
        for group in await self.groups_consuming(found[0].topic):
            places += [retry_topic(group), dlq_topic(group)]
        seen = {(m.store_host, m.commit_log_offset) for m in found}
        for place in places:
            with contextlib.suppress(MQClientError):  # the group never had a retry or a dead letter
                for copy in await self.query_by_key(place, unique_id, unique=True):
                    if (copy.store_host, copy.commit_log_offset) not in seen:
                        seen.add((copy.store_host, copy.commit_log_offset))
                        found.append(copy)
        return sorted(found, key=lambda m: m.store_timestamp)

    async def groups_consuming(self, topic: str) -> list[str]:
        """Consumer groups of ``topic`` on any master: members subscribed now, or offsets committed."""
        fields = QueryTopicConsumeByWhoRequestHeader(topic=topic).to_ext_fields()
        groups: set[str] = set()
        for address in (await self.master_addresses()).values():
            response = await self._broker(address, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, fields)
            groups.update(GroupList.decode(response.body).group_list)
        return sorted(groups)

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
