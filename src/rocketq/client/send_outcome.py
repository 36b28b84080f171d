"""What one send attempt's answer means, as pure functions: the ``SendResult`` of an accepted send, the
error of a refused one, and whether a failed attempt is worth another. The asyncio attempt
(``Producer._send_once``) and the blocking one (``rocketq.client.blocking_send``) both read their answers
here, so a send's result does not depend on the thread that made it."""

from __future__ import annotations

from typing import Final, final

from rocketq.client.answer_fields import SEND_ANSWER_KEYS, decode_send_answer_fields
from rocketq.client.answer_reads import answer_texts
from rocketq.client.errors import BrokerResponseError, MQClientError, broker_error
from rocketq.client.message import MessageQueue, SendResult, SendStatus
from rocketq.client.send_checks import PreparedSend, decimal_text
from rocketq.protocol import RemotingCommand, ResponseCode
from rocketq.remoting import RemotingError

STATUS_BY_CODE: dict[int, SendStatus] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}
"""Answer codes of a stored message, and the status its ``SendResult`` reports."""
_SUCCESS: Final = int(ResponseCode.SUCCESS)
_SEND_OK: Final = SendStatus.SEND_OK

RETRY_CODES = frozenset(
    {
        ResponseCode.TOPIC_NOT_EXIST,
        ResponseCode.SERVICE_NOT_AVAILABLE,
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.SYSTEM_BUSY,
        ResponseCode.NO_PERMISSION,
    }
)
"""Refusals after which another attempt (on another broker) may succeed."""


def send_result(response: RemotingCommand, queue: MessageQueue, unique_id: str, address: str) -> SendResult:
    """The ``SendResult`` of ``response``, the answer from ``address`` to a send of ``unique_id`` (one id,
    or a batch's ids joined by commas) to ``queue``.

    Raises:
        BrokerResponseError: the broker did not store the message (its code and remark).
        MQClientError: the answer's header is malformed (a queue id or offset that is not a number).
    """
    code = response.code
    status = _SEND_OK if code == _SUCCESS else STATUS_BY_CODE.get(code)  # (the usual answer: no dict read)
    if status is None:
        raise broker_error(response.code, response.remark, address)
    offset_ids, queue_id, offset = send_answer_fields(response, address)
    try:  # (int() of a str is the compiled string parse)
        # the broker chose another queue (the text compared first: the answer names the queue sent to,
        # as its decimal text, and then no number is parsed)
        if queue_id is not None and queue_id != decimal_text(queue.queue_id) and int(queue_id) != queue.queue_id:
            queue = MessageQueue(queue.topic, queue.broker_name, int(queue_id))
        queue_offset = -1 if offset is None else int(offset)
    except ValueError as exc:
        raise MQClientError(f"malformed send response from {address}: {exc}") from exc
    return SendResult(status, unique_id, "" if offset_ids is None else offset_ids, queue, queue_offset)


def send_answer_fields(response: RemotingCommand, address: str) -> tuple[str | None, str | None, str | None]:
    """A send answer's msgId, queueId and queueOffset, as ``response.ext_fields.get(key)`` gives them
    (``answer_reads.answer_texts``: from the extFields' JSON text when the answer kept it, no dict).

    Raises:
        MQClientError: the extFields are malformed (``ext_fields`` refuses them), ``address`` named.
    """
    offset_ids, queue_id, offset = answer_texts(response, address, decode_send_answer_fields, SEND_ANSWER_KEYS, "send")
    return offset_ids, queue_id, offset


def attempt_timeout(send_attempt_timeout_s: float | None, total_s: float, retries: int, idempotent: bool) -> float:
    """How long one attempt of a send may wait for its answer: ``send_attempt_timeout_s`` (the producer
    config's) when set; else
    the whole send timeout ``total_s``, or for an idempotent send an equal share of it per attempt (a
    timed-out attempt then leaves time for a retry, which the broker recognises as a repeat)."""
    if send_attempt_timeout_s is not None:
        return send_attempt_timeout_s
    return total_s / (1 + retries) if idempotent else total_s


@final
class FirstAttempt:
    """A send's first attempt on the common case (``Producer._first_attempt``), made on the loop or by a
    blocking caller on its own thread: the message prepared (``prepared``), the queue, its master's
    address and the request to it (None when the address is not known: the general attempt finds it),
    the send's time limit and the attempt's, the retries allowed. When it fails (``failed``): its
    error and the send's deadline (monotonic), which the retries after it keep."""

    def __init__(
        self,
        topic: str,
        prepared: PreparedSend,
        queue: MessageQueue,
        address: str | None,
        command: RemotingCommand | None,
        total_s: float,
        attempt_s: float,
        retries: int,
    ) -> None:
        self.topic = topic
        self.prepared = prepared
        self.queue = queue
        self.address = address
        self.command = command
        self.total_s = total_s
        self.attempt_s = attempt_s
        self.retries = retries
        self.error: Exception | None = None
        self.deadline = 0.0

    def failed(self, error: Exception, deadline: float) -> None:
        """The attempt failed with ``error``; the send must end by ``deadline``."""
        self.error = error
        self.deadline = deadline


def worth_retrying(error: Exception) -> bool:
    """Whether a send attempt that failed with ``error`` may be tried again: a lost or timed-out request,
    a client-side failure (no route, no address), or a refusal with one of ``RETRY_CODES``."""
    if isinstance(error, BrokerResponseError):
        return error.response_code in RETRY_CODES
    return isinstance(error, RemotingError | MQClientError)
