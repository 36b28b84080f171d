"""VIEW_MESSAGE_BY_ID (33) and QUERY_MESSAGE (12): records by CommitLog offset and by key.

Both read files that may not be in memory (an old record, a long collision chain, several IndexFiles),
so they run on the server's worker threads, never holding up the event loop's sends and pulls.
A query by key returns only the records that really hold the key inside the time range, up to its
limit (``rocketq.store.key_query``): a plain query matches KEYS, one marked ``_UNIQUE_KEY_QUERY``
matches UNIQ_KEY (and uses ``defaultQueryMaxNum``, as RocketMQ does).
"""

from __future__ import annotations

from rocketq.broker.context import BrokerContext, reply
from rocketq.common.record import encode_record
from rocketq.protocol import RemoteProtocolError, RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.headers import QueryMessageRequestHeader, QueryMessageResponseHeader, ViewMessageRequestHeader
from rocketq.remoting import Connection
from rocketq.remoting.server import BlockingHandler

UNIQUE_KEY_QUERY = "_UNIQUE_KEY_QUERY"


def handlers(context: BrokerContext) -> dict[int, BlockingHandler]:
    store = context.store

    def view(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        try:
            header = ViewMessageRequestHeader.from_ext_fields(request.ext_fields)
        except RemoteProtocolError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        record = store.lookup_message(header.offset)
        if record is None:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"no message at commit log offset {header.offset}")
        return reply(request, ResponseCode.SUCCESS, body=encode_record(record))

    def query(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        try:
            header = QueryMessageRequestHeader.from_ext_fields(request.ext_fields)
        except RemoteProtocolError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        unique = request.ext_fields.get(UNIQUE_KEY_QUERY) == "true"
        max_num = context.config.default_query_max_num if unique else header.max_num
        records = store.query_message(
            header.topic, header.key, max(1, max_num), header.begin_timestamp, header.end_timestamp, unique=unique
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
        RequestCode.VIEW_MESSAGE_BY_ID: BlockingHandler(view),
        RequestCode.QUERY_MESSAGE: BlockingHandler(query),
    }
