"""AdminClient: the operations behind ``rocketq admin`` (RocketMQ's MQAdminExt), async."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rocketq.client.config import ClientConfig
from rocketq.client.errors import MQClientError, RouteNotFoundError, ValidationError, broker_error
from rocketq.client.instance import ClientInstance
from rocketq.client.message import MessageExt, MessageQueue, decode_messages
from rocketq.client.message_query import FAR_FUTURE_MS, kept, newest_in_store_order, offset_id_address
from rocketq.client.pull import MATCH_ALL, PullStatus, pull_request, pull_result
from rocketq.client.route import MASTER_ID, PERM_READ, PERM_WRITE, subscribe_queues
from rocketq.common.group_topics import RETRY_PREFIX, dlq_topic, retry_topic
from rocketq.common.message import SCHEDULE_TOPIC, Property
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
    SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from rocketq.protocol.namesrv_headers import DeleteTopicFromNamesrvRequestHeader
from rocketq.protocol.transactions import PendingTransactions
from rocketq.remoting import RemotingError
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


TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
"""The group the admin tools read messages as (RocketMQ's MixAll.TOOLS_CONSUMER_GROUP)."""

DEFAULT_QUERY_MAX_NUM = 32
"""How many copies of one unique key a query returns per broker (a broker's ``defaultQueryMaxNum``)."""

DEFAULT_TIME_QUERY_MAX_NUM = 64
"""How many messages ``query_by_time`` returns at most: the most recent of the range."""

PULL_BATCH = 32
"""Messages asked for per pull when the admin client reads a queue's range."""


class AdminClient:
    """``access_key``/``secret_key``: an account of the brokers' ACL (an admin one to create or delete
    topics and groups and to reset offsets); requests are unsigned without them."""

    def __init__(
        self,
        namesrv_addr: str,
        *,
        timeout_s: float = 5.0,
        query_route_ttl_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        access_key: str = "",
        secret_key: str = "",
    ) -> None:
        """``query_route_ttl_s``: how long the message queries reuse a topic's route before asking the
        name servers again (the other operations always ask); ``clock`` measures it (seconds)."""
        config = ClientConfig(
            namesrv_addr=namesrv_addr, instance_name="admin", access_key=access_key, secret_key=secret_key
        )
        self._instance = ClientInstance(config)
        self._timeout = timeout_s
        self._query_route_ttl_s = query_route_ttl_s
        self._clock = clock
        self._query_routes: dict[str, tuple[float, TopicRouteData]] = {}

    async def __aenter__(self) -> AdminClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Disconnect from the NameServers and brokers."""
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
        return await self.request_broker(address, code, fields, ok=ok)

    async def request_broker(
        self,
        address: str,
        code: int,
        fields: dict[str, str] | None = None,
        *,
        body: bytes = b"",
        ok: tuple[int, ...] = (0,),
    ) -> RemotingCommand:
        """Send request ``code`` to the broker at ``address``; BrokerResponseError unless it answers
        with one of the codes in ``ok``."""
        response = await self._instance.invoke_broker(
            address, make_request(code, opaque=next_opaque(), ext_fields=fields or {}, body=body), self._timeout
        )
        if response.code not in ok:
            raise broker_error(response.code, response.remark, address)
        return response

    async def request_namesrv(self, code: int, fields: dict[str, str] | None = None) -> RemotingCommand:
        """Send request ``code`` to a NameServer; BrokerResponseError unless it succeeds."""
        return await self._namesrv(code, fields)

    @property
    def name_servers(self) -> list[str]:
        """The NameServer addresses this client was given."""
        return list(self._instance.config.name_servers)

    async def request_namesrv_at(self, address: str, code: int, fields: dict[str, str]) -> RemotingCommand:
        """Send request ``code`` to the NameServer at ``address`` (not another); BrokerResponseError
        unless it succeeds."""
        request = make_request(code, opaque=next_opaque(), ext_fields=fields)
        response = await self._instance.remoting.invoke(address, request, self._timeout)
        if response.code != ResponseCode.SUCCESS:
            raise broker_error(response.code, response.remark, f"name server {address}")
        return response

    # -- cluster and routes ---------------------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo:
        """The NameServers' cluster table: clusters, their brokers and the brokers' addresses."""
        return ClusterInfo.decode((await self._namesrv(RequestCode.GET_BROKER_CLUSTER_INFO)).body)

    async def topic_list(self) -> list[str]:
        """Every topic the NameServers know, sorted."""
        return sorted(
            TopicList.decode((await self._namesrv(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)).body).topic_list
        )

    async def topic_route(self, topic: str) -> TopicRouteData:
        """The route of ``topic``: its queues per broker and the brokers' addresses."""
        route = await self._instance.fetch_route(topic)
        if route is None:
            raise RouteNotFoundError(f"no route for topic {topic!r}: the name servers do not know it")
        return route

    async def _query_masters(self, topic: str) -> dict[str, str]:
        """broker name -> master address of ``topic``'s brokers, from a route at most
        ``query_route_ttl_s`` old: queries one after another do not each wait for a name server."""
        now = self._clock()
        cached = self._query_routes.get(topic)
        if cached is None or now - cached[0] >= self._query_route_ttl_s:
            cached = (now, await self.topic_route(topic))
            self._query_routes[topic] = cached
        return {b.broker_name: b.broker_addrs[MASTER_ID] for b in cached[1].broker_datas if MASTER_ID in b.broker_addrs}

    async def _query_broker(self, topic: str, address: str, code: int, fields: dict[str, Any]) -> RemotingCommand:
        """A query to one of ``topic``'s brokers; a broker that cannot be reached makes the next query
        look the route up again."""
        try:
            return await self._broker(address, code, fields, ok=(0, ResponseCode.QUERY_NOT_FOUND))
        except RemotingError:
            self._query_routes.pop(topic, None)
            raise

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

    # -- messages -------------------------------------------------------------------------------------

    async def view_message(self, offset_msg_id: str) -> MessageExt:
        """The message with this offset id (a send's ``offset_msg_id``: broker address and CommitLog
        offset). MQClientError when the id is not an offset id or no message starts there."""
        place = offset_id_address(offset_msg_id)
        if place is None:
            raise ValidationError(f"{offset_msg_id!r} is not an offset message id")
        address, offset = place
        response = await self._broker(
            address,
            RequestCode.VIEW_MESSAGE_BY_ID,
            ViewMessageRequestHeader(offset=offset).to_ext_fields(),
            ok=(0, ResponseCode.SYSTEM_ERROR),
        )
        messages = decode_messages(response.body) if response.code == ResponseCode.SUCCESS else []
        if not messages:
            raise MQClientError(f"message {offset_msg_id} not found: broker {address} has none at offset {offset}")
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
        """Messages of ``topic`` whose KEYS hold ``key`` (its UNIQ_KEY when ``unique``), stored between
        ``begin_ms`` and ``end_ms`` (ms since the epoch, both included; no end: up to now), from every
        master of the topic: the ``max_num`` most recently stored, oldest first. Messages whose key
        only has the same hash are left out (``rocketq.client.message_query``)."""
        masters = await self._query_masters(topic)
        end = end_ms if end_ms is not None else FAR_FUTURE_MS
        header = QueryMessageRequestHeader(
            topic=topic, key=key, max_num=max_num, begin_timestamp=begin_ms, end_timestamp=end
        )
        fields: dict[str, Any] = header.to_ext_fields()
        if unique:
            fields["_UNIQUE_KEY_QUERY"] = "true"
        found: list[MessageExt] = []
        for address in masters.values():
            response = await self._query_broker(topic, address, RequestCode.QUERY_MESSAGE, fields)
            if response.code == ResponseCode.SUCCESS:
                found.extend(decode_messages(response.body))
        matching = kept(found, topic, key, unique=unique, begin_ms=begin_ms, end_ms=end)
        return newest_in_store_order(matching, max_num)

    async def query_by_unique_key(self, topic: str, unique_key: str) -> list[MessageExt]:
        """The messages of ``topic`` whose client id (UNIQ_KEY, a send's ``msg_id``) is ``unique_key``,
        from every master, oldest first: usually one; more when a send was stored again (a retry that
        went to another broker, or a resend outside the idempotent window)."""
        return await self.query_by_key(topic, unique_key, unique=True, max_num=DEFAULT_QUERY_MAX_NUM)

    async def query_by_offset(self, topic: str, broker_name: str, queue_id: int, offset: int) -> MessageExt:
        """The message at ``offset`` of queue ``queue_id`` of ``topic`` on broker ``broker_name`` (read
        with a pull of one message as group ``TOOLS_CONSUMER``, which commits nothing). MQClientError
        when the queue has no message there, saying which offsets it holds."""
        masters = await self._query_masters(topic)
        address = masters.get(broker_name)
        if address is None:
            known = ", ".join(sorted(masters))
            raise RouteNotFoundError(f"topic {topic!r} has no master on broker {broker_name!r} (its brokers: {known})")
        queue = MessageQueue(topic, broker_name, queue_id)
        try:
            response = await self._instance.invoke_broker(
                address, pull_request(TOOLS_CONSUMER_GROUP, queue, offset, 1, MATCH_ALL), self._timeout
            )
        except RemotingError:
            self._query_routes.pop(topic, None)
            raise
        result = pull_result(response, (), address)
        found = [m for m in result.messages if m.queue_offset == offset]
        if result.status is not PullStatus.FOUND or not found:
            raise MQClientError(
                f"no message at offset {offset} of {queue}: it holds offsets {result.min_offset}"
                f" to {result.max_offset - 1}"
                if result.max_offset > result.min_offset
                else f"no message at offset {offset} of {queue}: the queue is empty"
            )
        return found[0]

    async def query_by_time(
        self, topic: str, begin_ms: int, end_ms: int, *, max_num: int = DEFAULT_TIME_QUERY_MAX_NUM
    ) -> list[MessageExt]:
        """Messages of ``topic`` stored between ``begin_ms`` and ``end_ms`` (ms since the epoch, both
        included), from every readable queue of every master: the ``max_num`` most recently stored,
        oldest first. Each queue's range is found with SEARCH_OFFSET_BY_TIMESTAMP and read with pulls as
        group ``TOOLS_CONSUMER`` (which commit nothing), at most ``max_num`` messages from its end."""
        if max_num < 1:
            raise ValidationError(f"max_num must be 1 or more, not {max_num}")
        if end_ms < begin_ms:
            raise ValidationError(f"the time range ends ({end_ms}) before it begins ({begin_ms})")
        route = await self.topic_route(topic)
        found: list[MessageExt] = []
        for queue in subscribe_queues(topic, route):
            found.extend(await self._stored_between(queue, begin_ms, end_ms, max_num))
        found.sort(key=lambda m: (m.store_timestamp, m.store_host, m.commit_log_offset))
        return found[-max_num:]

    async def _stored_between(self, queue: MessageQueue, begin_ms: int, end_ms: int, max_num: int) -> list[MessageExt]:
        """The last ``max_num`` messages of ``queue`` stored between ``begin_ms`` and ``end_ms``."""

        async def offset_at(timestamp_ms: int) -> int:
            fields = SearchOffsetRequestHeader(
                topic=queue.topic, queue_id=queue.queue_id, timestamp=timestamp_ms
            ).to_ext_fields()
            return await self._instance.queue_offset(
                RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, queue.topic, queue.broker_name, fields
            )

        end = await offset_at(end_ms + 1)  # the first message stored after the range (or the max offset)
        offset = max(await offset_at(begin_ms), end - max_num)
        address = await self._instance.find_master(queue.topic, queue.broker_name)
        if address is None:
            raise RouteNotFoundError(f"{queue}: broker {queue.broker_name} has no master in the topic's route")
        messages: list[MessageExt] = []
        while offset < end:
            request = pull_request(TOOLS_CONSUMER_GROUP, queue, offset, min(PULL_BATCH, end - offset), MATCH_ALL)
            result = pull_result(await self._instance.invoke_broker(address, request, self._timeout), (), address)
            if result.status is PullStatus.FOUND and result.messages:
                messages.extend(m for m in result.messages if m.queue_offset < end)
                offset = result.messages[-1].queue_offset + 1
            elif result.status is PullStatus.NO_MATCHED_MSG and result.next_begin_offset > offset:
                offset = result.next_begin_offset
            elif result.status is PullStatus.OFFSET_ILLEGAL and offset < result.min_offset < end:
                offset = result.min_offset  # the range's start was deleted meanwhile
            else:
                break
        return [m for m in messages if begin_ms <= m.store_timestamp <= end_ms]

    async def query_by_id(self, topic: str | None, msg_id: str, *, with_retries: bool = True) -> list[MessageExt]:
        """By the client's unique id (UNIQ_KEY) in ``topic``, else as an offset id (no topic needed);
        [] when neither finds it. Without ``topic``, an id that cannot be an offset id raises
        MQClientError saying to give the topic. ``with_retries``: also the message's copies, found by
        its unique id, in the retry and dead-letter topics of every group consuming its topic and in
        the delay topic (retries not yet due), all in store order."""
        place = offset_id_address(msg_id)
        if topic is None and place is None:
            raise MQClientError(
                f"{msg_id} is not an offset message id; if it is a client message id (UNIQ_KEY), give its topic (-t)"
            )
        found = await self.query_by_unique_key(topic, msg_id) if topic else []
        if not found and place is not None:
            try:
                found = [await self.view_message(msg_id)]
            except MQClientError:
                return []
        if not found or not with_retries:
            return found
        unique_id = found[0].properties.get(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        if unique_id is None:  # no client id to follow it by
            return found
        places = [SCHEDULE_TOPIC]
        for group in await self.groups_consuming(found[0].topic):
            places += [retry_topic(group), dlq_topic(group)]
        seen = {(m.store_host, m.commit_log_offset) for m in found}
        for place_topic in places:
            with contextlib.suppress(MQClientError):  # the group never had a retry or a dead letter
                for copy in await self.query_by_unique_key(place_topic, unique_id):
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
