"""The typed custom headers of RocketMQ's requests and responses (``extFields``).

Python names are snake_case, wire names RocketMQ's camelCase (``common/…/protocol/header/*.java``).
Fields without a default are the ones Java marks ``@CFNotNull``: a request missing one is rejected.
How values are written and read is in :mod:`rocketq.protocol.ext_fields`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import msgspec
import msgspec.structs

from rocketq.protocol.codes import RequestCode
from rocketq.protocol.ext_fields import RequestHeader, ResponseHeader

# --- send ------------------------------------------------------------------------


IDEMPOTENT_SEND_FIELD: Final = "rqIdempotent"
"""rocketq-only extField of a send request (10, 310, 320): "true" asks a rocketq broker to store the
message (or batch) once within its idempotent window, answering a repeat of its UNIQ_KEY with the first
store's result (``rocketq.broker.idempotent_sends``). RocketMQ brokers ignore it."""


class SendMessageRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """SEND_MESSAGE (10) long header; also the broker's canonical form of V2.

    ``rq_idempotent`` is rocketq's own mark (``IDEMPOTENT_SEND_FIELD``, under that name in both forms),
    read in the same decode as the rest of the header: "true" or "1" marks the send idempotent."""

    CODE = RequestCode.SEND_MESSAGE

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: int
    flag: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool = False
    batch: bool = False
    max_reconsume_times: int | None = None
    rq_idempotent: str | None = None

    def to_v2(self) -> SendMessageRequestHeaderV2:
        """Return the same header with V2's one-letter wire names."""
        return SendMessageRequestHeaderV2(**msgspec.structs.asdict(self))


_V2_WIRE_NAMES = {
    "producer_group": "a",
    "topic": "b",
    "default_topic": "c",
    "default_topic_queue_nums": "d",
    "queue_id": "e",
    "sys_flag": "f",
    "born_timestamp": "g",
    "flag": "h",
    "properties": "i",
    "reconsume_times": "j",
    "unit_mode": "k",
    "max_reconsume_times": "l",
    "batch": "m",
    "rq_idempotent": IDEMPOTENT_SEND_FIELD,
}


class SendMessageRequestHeaderV2(SendMessageRequestHeader, frozen=True, kw_only=True, rename=_V2_WIRE_NAMES):
    """SEND_MESSAGE_V2 (310) / SEND_BATCH_MESSAGE (320) header: V1's fields under keys a..m. A subclass of
    the long header, so the broker uses a parsed V2 header as it is (no copy into the long form). The
    fields are declared again: msgspec renames only the fields a class declares itself."""

    CODE = RequestCode.SEND_MESSAGE_V2

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: int
    flag: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool = False
    batch: bool = False
    max_reconsume_times: int | None = None
    rq_idempotent: str | None = None

    def to_v1(self) -> SendMessageRequestHeader:
        """Return the same header with the long wire names."""
        return SendMessageRequestHeader(**msgspec.structs.asdict(self))

    @classmethod
    def from_v1(cls, header: SendMessageRequestHeader) -> SendMessageRequestHeaderV2:
        """Build a V2 header from a long one."""
        return header.to_v2()


SEND_V2_HEADER_CODES: Final = frozenset(
    {RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2}
)
"""The send request codes whose header is the one-letter ``SendMessageRequestHeaderV2``."""


def parse_send_message_header(code: int, fields: Mapping[str, object]) -> SendMessageRequestHeader:
    """Parse a send request's header, whichever form was sent (a V2 header is a long one too).

    Codes 310, 320 and 325 carry the one-letter header; everything else the long one
    (as in Java's ``AbstractSendMessageProcessor.parseRequestHeader``).

    Raises:
        RemoteProtocolError: The header is invalid.
    """
    if code in SEND_V2_HEADER_CODES:
        return SendMessageRequestHeaderV2.from_ext_fields(fields)
    return SendMessageRequestHeader.from_ext_fields(fields)


class SendMessageResponseHeader(ResponseHeader, frozen=True, kw_only=True):
    """Send response: the offset message id (comma-joined for a batch) and where it went."""

    msg_id: str
    queue_id: int
    queue_offset: int
    transaction_id: str | None = None


# --- pull and offsets ------------------------------------------------------------


PULL_MAX_BYTES_FIELD: Final = "rqMaxBytes"
"""rocketq-only extField of PULL_MESSAGE (11): how many bytes of records the client wants in the answer,
instead of the broker's ``maxTransferBytesOnMessageInMemory`` (256 KiB), up to the broker's
``pullBytesLimit`` (8 MiB). A reader of a long backlog (the Spark source) pays per pull, not per byte.
RocketMQ brokers ignore it."""


class PullMessageRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """PULL_MESSAGE (11). ``sys_flag`` bits: 1 commit offset, 2 suspend, 4 subscription."""

    CODE = RequestCode.PULL_MESSAGE

    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msg_nums: int
    sys_flag: int
    commit_offset: int
    suspend_timeout_millis: int
    subscription: str | None = None
    sub_version: int
    expression_type: str | None = None
    max_bytes: int | None = msgspec.field(default=None, name=PULL_MAX_BYTES_FIELD)


class PullMessageResponseHeader(ResponseHeader, frozen=True, kw_only=True):
    suggest_which_broker_id: int
    next_begin_offset: int
    min_offset: int
    max_offset: int


class QueryConsumerOffsetRequestHeader(RequestHeader, frozen=True, kw_only=True):
    CODE = RequestCode.QUERY_CONSUMER_OFFSET

    consumer_group: str
    topic: str
    queue_id: int


class QueryConsumerOffsetResponseHeader(ResponseHeader, frozen=True, kw_only=True):
    offset: int


class UpdateConsumerOffsetRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """UPDATE_CONSUMER_OFFSET (15). ali-ons sends -1 for queues it never consumed."""

    CODE = RequestCode.UPDATE_CONSUMER_OFFSET

    consumer_group: str
    topic: str
    queue_id: int
    commit_offset: int


class GetMaxOffsetRequestHeader(RequestHeader, frozen=True, kw_only=True):
    CODE = RequestCode.GET_MAX_OFFSET

    topic: str
    queue_id: int


class GetMaxOffsetResponseHeader(ResponseHeader, frozen=True, kw_only=True):
    offset: int


class GetMinOffsetRequestHeader(RequestHeader, frozen=True, kw_only=True):
    CODE = RequestCode.GET_MIN_OFFSET

    topic: str
    queue_id: int


class GetMinOffsetResponseHeader(ResponseHeader, frozen=True, kw_only=True):
    offset: int


class SearchOffsetRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """SEARCH_OFFSET_BY_TIMESTAMP (29); ``timestamp`` in ms."""

    CODE = RequestCode.SEARCH_OFFSET_BY_TIMESTAMP

    topic: str
    queue_id: int
    timestamp: int


class SearchOffsetResponseHeader(ResponseHeader, frozen=True, kw_only=True):
    offset: int


class GetEarliestMsgStoretimeRequestHeader(RequestHeader, frozen=True, kw_only=True):
    CODE = RequestCode.GET_EARLIEST_MSG_STORETIME

    topic: str
    queue_id: int


class GetEarliestMsgStoretimeResponseHeader(ResponseHeader, frozen=True, kw_only=True):
    timestamp: int


# --- clients and groups ----------------------------------------------------------


class UnregisterClientRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """UNREGISTER_CLIENT (35). C++ sends ``""`` for the group it does not have."""

    CODE = RequestCode.UNREGISTER_CLIENT

    client_id: str = msgspec.field(name="clientID")
    producer_group: str | None = None
    consumer_group: str | None = None


class GetConsumerListByGroupRequestHeader(RequestHeader, frozen=True, kw_only=True):
    CODE = RequestCode.GET_CONSUMER_LIST_BY_GROUP

    consumer_group: str


class NotifyConsumerIdsChangedRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """NOTIFY_CONSUMER_IDS_CHANGED (40), broker to client."""

    CODE = RequestCode.NOTIFY_CONSUMER_IDS_CHANGED

    consumer_group: str


class ConsumerSendMsgBackRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """CONSUMER_SEND_MSG_BACK (36). ``offset`` is the commitlog physical offset."""

    CODE = RequestCode.CONSUMER_SEND_MSG_BACK

    offset: int
    group: str
    delay_level: int
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: int | None = None


# --- transactions ----------------------------------------------------------------


class EndTransactionRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """END_TRANSACTION (37). ``commit_or_rollback``: 0 unknown, 8 commit, 12 rollback."""

    CODE = RequestCode.END_TRANSACTION

    producer_group: str
    tran_state_table_offset: int
    commit_log_offset: int
    commit_or_rollback: int
    from_transaction_check: bool = False
    msg_id: str
    transaction_id: str | None = None


class CheckTransactionStateRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """CHECK_TRANSACTION_STATE (39), broker to producer."""

    CODE = RequestCode.CHECK_TRANSACTION_STATE

    tran_state_table_offset: int
    commit_log_offset: int
    msg_id: str | None = None
    transaction_id: str | None = None
    offset_msg_id: str | None = None


# --- messages by id or key -------------------------------------------------------


class ViewMessageRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """VIEW_MESSAGE_BY_ID (33). ``offset`` is the commitlog physical offset."""

    CODE = RequestCode.VIEW_MESSAGE_BY_ID

    offset: int


class QueryMessageRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """QUERY_MESSAGE (12). Extra key ``_UNIQUE_KEY_QUERY`` is read from ext_fields directly."""

    CODE = RequestCode.QUERY_MESSAGE

    topic: str
    key: str
    max_num: int
    begin_timestamp: int
    end_timestamp: int


class QueryMessageResponseHeader(ResponseHeader, frozen=True, kw_only=True):
    index_last_update_timestamp: int
    index_last_update_phyoffset: int


# --- topics ----------------------------------------------------------------------


class CreateTopicRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """UPDATE_AND_CREATE_TOPIC (17).

    Java marks ``order`` not-null, but the C++ client never sends it, so it defaults to
    False here.
    """

    CODE = RequestCode.UPDATE_AND_CREATE_TOPIC

    topic: str
    default_topic: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_filter_type: str
    topic_sys_flag: int | None = None
    order: bool = False


class DeleteTopicRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """DELETE_TOPIC_IN_BROKER (215); the NameServer's DELETE_TOPIC_IN_NAMESRV has the same shape."""

    CODE = RequestCode.DELETE_TOPIC_IN_BROKER

    topic: str


# --- name server -----------------------------------------------------------------


class GetRouteInfoRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """GET_ROUTEINFO_BY_TOPIC (105)."""

    CODE = RequestCode.GET_ROUTEINFO_BY_TOPIC

    topic: str
    accept_standard_json_only: bool | None = None


class RegisterBrokerRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """REGISTER_BROKER (103). ``body_crc32`` 0 means "do not check"."""

    CODE = RequestCode.REGISTER_BROKER

    broker_name: str
    broker_addr: str
    cluster_name: str
    ha_server_addr: str
    broker_id: int
    compressed: bool = False
    body_crc32: int = 0


class RegisterBrokerResponseHeader(ResponseHeader, frozen=True, kw_only=True):
    """Filled only for a slave whose master is alive."""

    ha_server_addr: str | None = None
    master_addr: str | None = None


class UnregisterBrokerRequestHeader(RequestHeader, frozen=True, kw_only=True):
    CODE = RequestCode.UNREGISTER_BROKER

    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: int


class QueryDataVersionRequestHeader(RequestHeader, frozen=True, kw_only=True):
    CODE = RequestCode.QUERY_DATA_VERSION

    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: int


class QueryDataVersionResponseHeader(ResponseHeader, frozen=True, kw_only=True):
    changed: bool


# --- consumer groups: administration ---------------------------------------------


class GetConsumerConnectionListRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """GET_CONSUMER_CONNECTION_LIST (203)."""

    CODE = RequestCode.GET_CONSUMER_CONNECTION_LIST

    consumer_group: str


class QueryTopicConsumeByWhoRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """QUERY_TOPIC_CONSUME_BY_WHO (300): the consumer groups of a topic."""

    CODE = RequestCode.QUERY_TOPIC_CONSUME_BY_WHO

    topic: str


class GetTopicStatsInfoRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """GET_TOPIC_STATS_INFO (202): every queue's offsets and last store time (mqadmin topicStatus)."""

    CODE = RequestCode.GET_TOPIC_STATS_INFO

    topic: str


class GetConsumeStatsRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """GET_CONSUME_STATS (208); without ``topic`` every topic the group has offsets for."""

    CODE = RequestCode.GET_CONSUME_STATS

    consumer_group: str
    topic: str | None = None


class ResetOffsetRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """INVOKE_BROKER_TO_RESET_OFFSET (222), and RESET_CONSUMER_CLIENT_OFFSET (220) broker to client.

    ``timestamp`` in ms; -1 means the end of each queue.
    """

    CODE = RequestCode.INVOKE_BROKER_TO_RESET_OFFSET

    topic: str
    group: str
    timestamp: int
    is_force: bool


class DeleteSubscriptionGroupRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """DELETE_SUBSCRIPTIONGROUP (207); ``remove_offset`` also drops the group's committed offsets."""

    CODE = RequestCode.DELETE_SUBSCRIPTIONGROUP

    group_name: str
    remove_offset: bool = False
