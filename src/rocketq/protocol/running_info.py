"""What a consumer answers about itself: GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY
(309), the admin tools' requests a broker forwards to one member of a group on its own connection.

The bodies keep Java's field names (ConsumerRunningInfo: ``properties``, ``subscriptionSet``,
``mqTable``, ``statusTable``, ``jstack``; ProcessQueueInfo; ConsumeStatus;
ConsumeMessageDirectlyResult). ``mqTable`` is a map keyed by MessageQueue objects, written as fastjson
writes one (the queue's object text as the key), so Java's tools read it.
"""

from __future__ import annotations

import json
from typing import Any, Final, Self

import msgspec

from rocketq.protocol.bodies import JsonBody, SubscriptionData
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.errors import RemoteProtocolError
from rocketq.protocol.ext_fields import RequestHeader
from rocketq.protocol.fastjson import quote_object_keys

_ENCODER: Final = msgspec.json.Encoder()

PROP_CONSUME_TYPE: Final = "PROP_CONSUME_TYPE"
PROP_CONSUME_ORDERLY: Final = "PROP_CONSUMEORDERLY"
PROP_CLIENT_VERSION: Final = "PROP_CLIENT_VERSION"
PROP_CONSUMER_START_TIMESTAMP: Final = "PROP_CONSUMER_START_TIMESTAMP"
PROP_NAMESERVER_ADDR: Final = "PROP_NAMESERVER_ADDR"
PROP_THREADPOOL_CORE_SIZE: Final = "PROP_THREADPOOL_CORE_SIZE"


class GetConsumerRunningInfoRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """GET_CONSUMER_RUNNING_INFO (307): admin to broker, and the broker forwards it to the member."""

    CODE = RequestCode.GET_CONSUMER_RUNNING_INFO

    consumer_group: str
    client_id: str
    jstack_enable: bool = False


class ConsumeMessageDirectlyResultRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """CONSUME_MESSAGE_DIRECTLY (309): admin to broker (which looks the message up by ``msg_id``, an
    offset message id), then broker to the member with the message as the body."""

    CODE = RequestCode.CONSUME_MESSAGE_DIRECTLY

    consumer_group: str
    client_id: str | None = None
    msg_id: str | None = None
    broker_name: str | None = None


class ProcessQueueInfo(JsonBody, frozen=True, kw_only=True):
    """One assigned queue of a consumer: where it commits, what it holds in memory, its lock."""

    commit_offset: int = 0
    cached_msg_min_offset: int = 0
    cached_msg_max_offset: int = 0
    cached_msg_count: int = 0
    cached_msg_size_in_mi_b: int = msgspec.field(name="cachedMsgSizeInMiB", default=0)
    transaction_msg_min_offset: int = 0
    transaction_msg_max_offset: int = 0
    transaction_msg_count: int = 0
    locked: bool = False
    try_unlock_times: int = 0
    last_lock_timestamp: int = 0
    droped: bool = False  # (Java's spelling)
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0


class ConsumeStatus(JsonBody, frozen=True, kw_only=True):
    """A consumer's rates for one topic: pull round trip (ms) and messages pulled a second, consume
    time per message (ms), messages consumed a second, failures a second and in the last hour."""

    pull_rt: float = msgspec.field(name="pullRT", default=0.0)
    pull_tps: float = msgspec.field(name="pullTPS", default=0.0)
    consume_rt: float = msgspec.field(name="consumeRT", default=0.0)
    consume_ok_tps: float = msgspec.field(name="consumeOKTPS", default=0.0)
    consume_failed_tps: float = msgspec.field(name="consumeFailedTPS", default=0.0)
    consume_failed_msgs: int = msgspec.field(name="consumeFailedMsgs", default=0)


class QueueInfo(msgspec.Struct, frozen=True):
    """A ``mqTable`` entry: the queue and its ProcessQueueInfo."""

    topic: str
    broker_name: str
    queue_id: int
    info: ProcessQueueInfo


class ConsumerRunningInfo(msgspec.Struct, frozen=True, kw_only=True):
    properties: dict[str, str] = msgspec.field(default_factory=dict)
    subscription_set: list[SubscriptionData] = msgspec.field(default_factory=list)
    mq_table: list[QueueInfo] = msgspec.field(default_factory=list)
    status_table: dict[str, ConsumeStatus] = msgspec.field(default_factory=dict)
    jstack: str | None = None

    def encode(self) -> bytes:
        """Java's form: ``mqTable`` keyed by queue objects (fastjson's way)."""
        pairs = [
            b"%s:%s"
            % (
                _ENCODER.encode({"brokerName": entry.broker_name, "queueId": entry.queue_id, "topic": entry.topic}),
                _ENCODER.encode(entry.info),
            )
            for entry in sorted(self.mq_table, key=lambda e: (e.topic, e.broker_name, e.queue_id))
        ]
        rest = _ENCODER.encode(
            {
                "jstack": self.jstack,
                "properties": self.properties,
                "statusTable": self.status_table,
                "subscriptionSet": self.subscription_set,
            }
        )
        return b'{"mqTable":{%s},%s' % (b",".join(pairs), rest[1:])

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> Self:
        """Read Java's form (or this one's)."""
        try:
            raw: dict[str, Any] = json.loads(quote_object_keys(data))
            table = [
                QueueInfo(
                    str(queue["topic"]),
                    str(queue["brokerName"]),
                    int(queue["queueId"]),
                    msgspec.convert(info, ProcessQueueInfo, strict=False),
                )
                for key, info in (raw.get("mqTable") or {}).items()
                for queue in [json.loads(key)]
            ]
            return cls(
                properties={str(k): str(v) for k, v in (raw.get("properties") or {}).items()},
                subscription_set=msgspec.convert(
                    raw.get("subscriptionSet") or [], list[SubscriptionData], strict=False
                ),
                mq_table=table,
                status_table=msgspec.convert(raw.get("statusTable") or {}, dict[str, ConsumeStatus], strict=False),
                jstack=raw.get("jstack"),
            )
        except (ValueError, KeyError, TypeError, msgspec.ValidationError) as exc:
            raise RemoteProtocolError(f"invalid ConsumerRunningInfo body: {exc}") from exc


class ConsumeMessageDirectlyResult(JsonBody, frozen=True, kw_only=True):
    """How a member consumed one message on an operator's request. ``consume_result`` is Java's
    CMResult: CR_SUCCESS, CR_LATER, CR_ROLLBACK, CR_COMMIT, CR_THROW_EXCEPTION or CR_RETURN_NULL."""

    order: bool = False
    auto_commit: bool = True
    consume_result: str = "CR_SUCCESS"
    remark: str | None = None
    spent_time_mills: int = 0
