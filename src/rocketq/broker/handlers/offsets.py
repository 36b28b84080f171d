"""Offset requests: consumer offsets (14, 15) and queue offsets (29, 30, 31, 32) (ConsumerManageProcessor,
AdminBrokerProcessor)."""

from __future__ import annotations

import os

from rocketq.broker.context import BrokerContext, parsed, reply
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.headers import (
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketq.remoting import RequestHandler


def handlers(context: BrokerContext) -> dict[int, RequestHandler]:
    store = context.store
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    in_memory_bytes = ram * context.config.access_message_in_memory_max_ratio // 100

    def on_disk_only(topic: str, queue_id: int, queue_offset: int) -> bool:
        """Java's checkInDiskByConsumeOffset: the record is older than the newest
        ``accessMessageInMemoryMaxRatio`` % of RAM worth of CommitLog."""
        physical = store.get_commit_log_offset_in_queue(topic, queue_id, queue_offset)
        return physical is not None and store.commit_log.max_offset - physical > in_memory_bytes

    def query_consumer_offset(request: RemotingCommand, header: QueryConsumerOffsetRequestHeader) -> RemotingCommand:
        offset = context.offsets.query(header.consumer_group, header.topic, header.queue_id)
        if offset is None:
            # Like Java: a group new to a queue whose first message is still here, and still in memory,
            # starts at 0; otherwise the client applies its consume_from_where
            first_kept = store.get_min_offset_in_queue(header.topic, header.queue_id) <= 0
            if first_kept and not on_disk_only(header.topic, header.queue_id, 0):
                offset = 0
            else:
                return reply(
                    request,
                    ResponseCode.QUERY_NOT_FOUND,
                    "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
                )
        return reply(
            request, ResponseCode.SUCCESS, ext_fields=QueryConsumerOffsetResponseHeader(offset=offset).to_ext_fields()
        )

    def update_consumer_offset(request: RemotingCommand, header: UpdateConsumerOffsetRequestHeader) -> RemotingCommand:
        context.offsets.commit(header.consumer_group, header.topic, header.queue_id, header.commit_offset)
        return reply(request, ResponseCode.SUCCESS)

    def max_offset(request: RemotingCommand, header: GetMaxOffsetRequestHeader) -> RemotingCommand:
        offset = store.get_max_offset_in_queue(header.topic, header.queue_id)
        return reply(
            request, ResponseCode.SUCCESS, ext_fields=GetMaxOffsetResponseHeader(offset=offset).to_ext_fields()
        )

    def min_offset(request: RemotingCommand, header: GetMinOffsetRequestHeader) -> RemotingCommand:
        offset = store.get_min_offset_in_queue(header.topic, header.queue_id)
        return reply(
            request, ResponseCode.SUCCESS, ext_fields=GetMinOffsetResponseHeader(offset=offset).to_ext_fields()
        )

    def search_offset(request: RemotingCommand, header: SearchOffsetRequestHeader) -> RemotingCommand:
        offset = store.get_offset_by_timestamp(header.topic, header.queue_id, header.timestamp)
        return reply(
            request, ResponseCode.SUCCESS, ext_fields=SearchOffsetResponseHeader(offset=offset).to_ext_fields()
        )

    def earliest_time(request: RemotingCommand, header: GetEarliestMsgStoretimeRequestHeader) -> RemotingCommand:
        timestamp = store.get_earliest_message_time(header.topic, header.queue_id)
        if timestamp is None:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"no message in {header.topic}-{header.queue_id}")
        fields = GetEarliestMsgStoretimeResponseHeader(timestamp=timestamp).to_ext_fields()
        return reply(request, ResponseCode.SUCCESS, ext_fields=fields)

    return {
        RequestCode.QUERY_CONSUMER_OFFSET: parsed(QueryConsumerOffsetRequestHeader, query_consumer_offset),
        RequestCode.UPDATE_CONSUMER_OFFSET: parsed(UpdateConsumerOffsetRequestHeader, update_consumer_offset),
        RequestCode.GET_MAX_OFFSET: parsed(GetMaxOffsetRequestHeader, max_offset),
        RequestCode.GET_MIN_OFFSET: parsed(GetMinOffsetRequestHeader, min_offset),
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: parsed(SearchOffsetRequestHeader, search_offset),
        RequestCode.GET_EARLIEST_MSG_STORETIME: parsed(GetEarliestMsgStoretimeRequestHeader, earliest_time),
    }
