"""One PULL_MESSAGE exchange as consumers use it: the request, the statuses, client-side tag filtering."""

from __future__ import annotations

import enum
from collections.abc import Collection
from dataclasses import dataclass
from typing import Final, final

from rocketq.client.answer_fields import PULL_ANSWER_KEYS, decode_pull_answer_fields
from rocketq.client.answer_reads import answer_texts
from rocketq.client.errors import MQClientError, broker_error
from rocketq.client.message import MessageExt, MessageQueue, decode_messages
from rocketq.client.route import MASTER_ID
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.headers import PULL_MAX_BYTES_FIELD
from rocketq.protocol.request_templates import filled_pull_header, pull_header_parts, pull_request_header
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


_PULL_MESSAGE: Final = int(RequestCode.PULL_MESSAGE)  # (an IntEnum member read in compiled code is a lookup)


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
    """A PULL_MESSAGE request (a queue pulled again and again: ``QueuePulls``)."""
    fields = pull_fields(
        group, queue, offset, max_nums, expression, commit_offset, suspend_ms, sub_version, expression_type, max_bytes
    )
    opaque = next_opaque()
    # the JSON header written from its template (rocketq.protocol.request_templates), not by the generic encoder
    header = pull_request_header(opaque, fields, None if max_bytes is None else PULL_MAX_BYTES_FIELD)
    return RemotingCommand(code=_PULL_MESSAGE, opaque=opaque, ext_fields=fields, encoded_header=header)


def pull_fields(
    group: str,
    queue: MessageQueue,
    offset: int,
    max_nums: int,
    expression: str,
    commit_offset: int,
    suspend_ms: int,
    sub_version: int,
    expression_type: str,
    max_bytes: int | None,
) -> dict[str, str]:
    """A pull request's ``extFields`` (``pull_request``'s arguments)."""
    # The fields of PullMessageRequestHeader, written out: one dict per pull, built here in compiled code
    # (the header's own to_ext_fields is interpreted); tests/client/test_written_headers.py holds them equal.
    fields = {
        "consumerGroup": group,
        "topic": queue.topic,
        "queueId": str(queue.queue_id),
        "queueOffset": str(offset),
        "maxMsgNums": str(max_nums),
        "sysFlag": str(sys_flag_of(commit_offset, suspend_ms)),
        "commitOffset": str(max(commit_offset, 0)),
        "suspendTimeoutMillis": str(suspend_ms),
        "subscription": expression or MATCH_ALL,
        "subVersion": str(sub_version),
        "expressionType": expression_type,
    }
    if max_bytes is not None:
        fields[PULL_MAX_BYTES_FIELD] = str(max_bytes)
    return fields


def sys_flag_of(commit_offset: int, suspend_ms: int) -> int:
    """A pull request's sysFlag: it carries a subscription, commits ``commit_offset`` when positive, and
    may be held ``suspend_ms`` when positive."""
    sys_flag = FLAG_SUBSCRIPTION
    if commit_offset > 0:
        sys_flag |= FLAG_COMMIT_OFFSET
    if suspend_ms > 0:
        sys_flag |= FLAG_SUSPEND
    return sys_flag


@final
class QueuePulls:
    """The pull requests of one queue that differ only in their offset and commit offset (a push
    consumer's, one after the other): ``pull_request``'s, written from what they share, made once. A
    pull copies the template's ``extFields`` and sets three of them, and writes three numbers and the
    opaque into its header's parts (``request_templates.pull_header_parts``), instead of eleven values
    made text and a header written whole. ``tests/client/test_queue_pulls.py`` holds each request equal
    to ``pull_request``'s (hypothesis)."""

    def __init__(
        self,
        group: str,
        queue: MessageQueue,
        max_nums: int,
        expression: str,
        suspend_ms: int,
        sub_version: int,
        expression_type: str,
    ) -> None:
        self.group = group
        self.queue = queue
        self.max_nums = max_nums
        self.expression = expression
        self.suspend_ms = suspend_ms
        self.sub_version = sub_version
        self.expression_type = expression_type
        self._fields = pull_fields(
            group, queue, 0, max_nums, expression, 0, suspend_ms, sub_version, expression_type, None
        )
        self._parts = pull_header_parts(self._fields, None)
        self._sys_flag = str(sys_flag_of(0, suspend_ms))
        self._sys_flag_committing = str(sys_flag_of(1, suspend_ms))

    def serves(
        self, group: str, max_nums: int, expression: str, suspend_ms: int, sub_version: int, expression_type: str
    ) -> bool:
        """Whether this queue's pulls with these settings are the ones this template writes."""
        return (
            sub_version == self.sub_version
            and expression == self.expression
            and max_nums == self.max_nums
            and suspend_ms == self.suspend_ms
            and group == self.group
            and expression_type == self.expression_type
        )

    def request(self, offset: int, commit_offset: int) -> RemotingCommand:
        """``pull_request(group, queue, offset, max_nums, expression, commit_offset=commit_offset,
        suspend_ms=..., sub_version=..., expression_type=...)`` with this template's settings."""
        committing = commit_offset > 0
        offset_text = str(offset)
        commit_text = str(commit_offset) if committing else "0"
        sys_flag = self._sys_flag_committing if committing else self._sys_flag
        fields = self._fields.copy()  # (keys in their order; the three set below keep their places)
        fields["queueOffset"] = offset_text
        fields["sysFlag"] = sys_flag
        fields["commitOffset"] = commit_text
        opaque = next_opaque()
        header = filled_pull_header(self._parts, offset_text, sys_flag, commit_text, opaque)
        return RemotingCommand(code=_PULL_MESSAGE, opaque=opaque, ext_fields=fields, encoded_header=header)


def is_pull_answer(response: RemotingCommand) -> bool:
    """The response is one of a pull's answers (found, nothing new, retry, offset moved), not a refusal."""
    return response.code in _STATUS


PullAnswerFields = tuple[str | None, str | None, str | None, str | None]
"""A pull answer's suggestWhichBrokerId, nextBeginOffset, minOffset and maxOffset as text (None: absent)."""


def pull_answer_fields(response: RemotingCommand, address: str) -> PullAnswerFields:
    """``response``'s ``PullAnswerFields`` as ``response.ext_fields.get(key)`` gives them
    (``answer_reads.answer_texts``: from the extFields' JSON text when the answer kept it, no dict).

    Raises:
        MQClientError: the extFields are malformed (``ext_fields`` refuses them), ``address`` named.
    """
    suggested, next_begin, low, high = answer_texts(
        response, address, decode_pull_answer_fields, PULL_ANSWER_KEYS, "pull"
    )
    return suggested, next_begin, low, high


def broker_id_of(suggested: str | None) -> int:
    """The broker of the group a pull answer suggests for the queue's next pull (its suggestWhichBrokerId,
    ``pull_answer_fields``'s first): the master when it says nothing readable."""
    if suggested == "0":  # (the usual answer: the master, without the text's checks and parse)
        return MASTER_ID
    return int(suggested) if suggested is not None and suggested.isdecimal() else MASTER_ID


def suggested_broker_id(response: RemotingCommand, address: str = "") -> int:
    """The broker of the group ``response`` suggests for the queue's next pull (``broker_id_of``).

    Raises:
        MQClientError: the answer's header is malformed.
    """
    return broker_id_of(pull_answer_fields(response, address)[0])


def pull_outcome(
    response: RemotingCommand, address: str, fields: PullAnswerFields | None = None
) -> tuple[PullStatus, int, int, int]:
    """A pull response's status, next begin offset, and the queue's min and max offset (``fields``: its
    ``pull_answer_fields`` when read already); the broker's error for any other answer, MQClientError
    when the offsets are malformed."""
    status = _STATUS.get(response.code)
    if status is None:
        raise broker_error(response.code, response.remark, address)
    _, next_text, low_text, high_text = pull_answer_fields(response, address) if fields is None else fields
    try:  # (int() of a str is the compiled string parse)
        next_begin = 0 if next_text is None else int(next_text)
        low = 0 if low_text is None else int(low_text)
        high = 0 if high_text is None else int(high_text)
    except ValueError as exc:
        raise MQClientError(f"malformed pull response from {address}: {exc}") from exc
    return status, next_begin, low, high


def pull_result(
    response: RemotingCommand, tags: Collection[str], address: str, fields: PullAnswerFields | None = None
) -> PullResult:
    """Interpret a pull response (``fields``: its ``pull_answer_fields`` when read already); the broker
    filtered by tag hash, this filters by tag text (hash codes can collide), as every RocketMQ client
    does."""
    status, next_begin, low, high = pull_outcome(response, address, fields)
    try:
        messages = decode_messages(response.body) if status is PullStatus.FOUND else []
    except ValueError as exc:  # RecordFormatError is one
        raise MQClientError(f"malformed pull response from {address}: {exc}") from exc
    if tags:
        messages = [m for m in messages if m.tags in tags]
    return PullResult(status, next_begin, low, high, messages)
