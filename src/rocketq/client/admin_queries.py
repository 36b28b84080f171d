"""The AdminClient's message queries (``queryMsgByKey``, ``queryMsgByUniqueKey``, ``queryMsgById``,
``queryMsgByOffset``; the dashboard's search by store time): from every master of a topic; and which
groups consume a topic (a message's retries are found through them)."""

from __future__ import annotations

import contextlib
from typing import Any

from rocketq.client.admin_connection import AdminConnection
from rocketq.client.errors import MQClientError, RouteNotFoundError, ValidationError
from rocketq.client.message import MessageExt, MessageQueue, decode_messages
from rocketq.client.message_query import FAR_FUTURE_MS, kept, newest_in_store_order, offset_id_address
from rocketq.client.pull import MATCH_ALL, PullStatus, pull_request, pull_result
from rocketq.client.route import subscribe_queues
from rocketq.common.group_topics import TOOLS_CONSUMER_GROUP, dlq_topic, retry_topic
from rocketq.common.message import SCHEDULE_TOPIC, Property
from rocketq.protocol import (
    RequestCode,
    ResponseCode,
)
from rocketq.protocol.bodies import (
    GroupList,
)
from rocketq.protocol.headers import (
    QueryMessageRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    SearchOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from rocketq.remoting import RemotingError

DEFAULT_QUERY_MAX_NUM = 32
"""How many copies of one unique key a query returns per broker (a broker's ``defaultQueryMaxNum``)."""

DEFAULT_TIME_QUERY_MAX_NUM = 64
"""How many messages ``query_by_time`` returns at most: the most recent of the range."""

PULL_BATCH = 32
"""Messages asked for per pull when the admin client reads a queue's range."""


class AdminQueries(AdminConnection):
    """The message queries of an :class:`~rocketq.client.admin.AdminClient` (its base class)."""

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
