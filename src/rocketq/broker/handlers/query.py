"""VIEW_MESSAGE_BY_ID (33) and QUERY_MESSAGE (12): records by CommitLog offset and by key."""

from __future__ import annotations

from rocketq.broker.context import BrokerContext, parsed, reply
from rocketq.common.record import encode_record
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.headers import QueryMessageRequestHeader, QueryMessageResponseHeader, ViewMessageRequestHeader
from rocketq.remoting import RequestHandler

UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"


def handlers(context: BrokerContext) -> dict[int, RequestHandler]:
    store = context.store

    def view(request: RemotingCommand, header: ViewMessageRequestHeader) -> RemotingCommand:
        record = store.lookup_message(header.offset)
        if record is None:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"no message at commit log offset {header.offset}")
        return reply(request, ResponseCode.SUCCESS, body=encode_record(record))

    def query(request: RemotingCommand, header: QueryMessageRequestHeader) -> RemotingCommand:
        max_num = header.max_num
        if request.ext_fields.get(UNIQUE_KEY_QUERY) == "true":
            max_num = context.config.default_query_max_num
        records = store.query_message(
            header.topic, header.key, max(1, max_num), header.begin_timestamp, header.end_timestamp
        )
        index = store.index
        fields = QueryMessageResponseHeader(
            index_last_update_timestamp=index.end_timestamp if index else 0,
            index_last_update_phyoffset=max(0, index.end_phy_offset) if index else 0,
        ).to_ext_fields()
        if not records:
            return reply(
                request,
                ResponseCode.QUERY_NOT_FOUND,
                "can not find message, maybe time range not correct",
                ext_fields=fields,
            )
        return reply(
            request, ResponseCode.SUCCESS, ext_fields=fields, body=b"".join(encode_record(record) for record in records)
        )

    return {
        RequestCode.VIEW_MESSAGE_BY_ID: parsed(ViewMessageRequestHeader, view),
        RequestCode.QUERY_MESSAGE: parsed(QueryMessageRequestHeader, query),
    }
