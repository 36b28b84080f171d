"""One PULL_MESSAGE exchange as consumers use it: the request, the statuses, client-side tag filtering."""

from __future__ import annotations

import enum
from collections.abc import Collection
from dataclasses import dataclass

from rocketq.client.errors import MQClientError, broker_error
from rocketq.client.message import MessageExt, MessageQueue, decode_messages
from rocketq.client.route import MASTER_ID
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.headers import PULL_MAX_BYTES_FIELD
from rocketq.protocol.request_templates import pull_request_header
from rocketq.remoting.connection import next_opaque

FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
MATCH_ALL = "*"


class PullStatus(enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_STATUS: dict[int, PullStatus] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


@dataclass(frozen=True, slots=True, init=False)
class PullResult:
    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt]

    def __init__(  # see rocketq.native.modules
        self,
        status: PullStatus,
        next_begin_offset: int,
        min_offset: int,
        max_offset: int,
        messages: list[MessageExt] | None = None,
    ) -> None:
        object.__setattr__(self, "status", status)
        object.__setattr__(self, "next_begin_offset", next_begin_offset)
        object.__setattr__(self, "min_offset", min_offset)
        object.__setattr__(self, "max_offset", max_offset)
        object.__setattr__(self, "messages", [] if messages is None else messages)


def pull_request(
    group: str,
    queue: MessageQueue,
    offset: int,
    max_nums: int,
    expression: str,
    *,
    commit_offset: int = 0,
    suspend_ms: int = 0,
    sub_version: int = 0,
    expression_type: str = "TAG",
    max_bytes: int | None = None,
) -> RemotingCommand:
    sys_flag = FLAG_SUBSCRIPTION
    if commit_offset > 0:
        sys_flag |= FLAG_COMMIT_OFFSET
    if suspend_ms > 0:
        sys_flag |= FLAG_SUSPEND
    # The fields of PullMessageRequestHeader, written out: one dict per pull, built here in compiled code
    # (the header's own to_ext_fields is interpreted); tests/client/test_written_headers.py holds them equal.
    fields = {
        "consumerGroup": group,
        "topic": queue.topic,
        "queueId": str(queue.queue_id),
        "queueOffset": str(offset),
        "maxMsgNums": str(max_nums),
        "sysFlag": str(sys_flag),
        "commitOffset": str(max(commit_offset, 0)),
        "suspendTimeoutMillis": str(suspend_ms),
        "subscription": expression or MATCH_ALL,
        "subVersion": str(sub_version),
        "expressionType": expression_type,
    }
    if max_bytes is not None:
        fields[PULL_MAX_BYTES_FIELD] = str(max_bytes)
    opaque = next_opaque()
    # the JSON header written from its template (rocketq.protocol.request_templates), not by the generic encoder
    header = pull_request_header(opaque, fields, None if max_bytes is None else PULL_MAX_BYTES_FIELD)
    return RemotingCommand(code=RequestCode.PULL_MESSAGE, opaque=opaque, ext_fields=fields, encoded_header=header)


def is_pull_answer(response: RemotingCommand) -> bool:
    """The response is one of a pull's answers (found, nothing new, retry, offset moved), not a refusal."""
    return response.code in _STATUS


def suggested_broker_id(response: RemotingCommand) -> int:
    """The broker of the group a pull answer suggests for the queue's next pull (suggestWhichBrokerId;
    the master when it says nothing readable)."""
    suggested = response.ext_fields.get("suggestWhichBrokerId", "0")
    return int(suggested) if suggested.isdigit() else MASTER_ID


def pull_outcome(response: RemotingCommand, address: str) -> tuple[PullStatus, int, int, int]:
    """A pull response's status, next begin offset, and the queue's min and max offset; the broker's error
    for any other answer, MQClientError when the offsets are malformed."""
    status = _STATUS.get(response.code)
    if status is None:
        raise broker_error(response.code, response.remark, address)
    fields = response.ext_fields
    try:  # (three reads written out: no list or tuple made to be unpacked)
        next_begin = int(fields.get("nextBeginOffset", 0))
        low = int(fields.get("minOffset", 0))
        high = int(fields.get("maxOffset", 0))
    except ValueError as exc:
        raise MQClientError(f"malformed pull response from {address}: {exc}") from exc
    return status, next_begin, low, high


def pull_result(response: RemotingCommand, tags: Collection[str], address: str) -> PullResult:
    """Interpret a pull response; the broker filtered by tag hash, this filters by tag text
    (hash codes can collide), as every RocketMQ client does."""
    status, next_begin, low, high = pull_outcome(response, address)
    try:
        messages = decode_messages(response.body) if status is PullStatus.FOUND else []
    except ValueError as exc:  # RecordFormatError is one
        raise MQClientError(f"malformed pull response from {address}: {exc}") from exc
    if tags:
        messages = [m for m in messages if m.tags in tags]
    return PullResult(status, next_begin, low, high, messages)
