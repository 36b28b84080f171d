"""The send path's shortcuts give what the plain ways give (hypothesis): a send answer's queue compared
as its decimal text first (``send_outcome.send_result``) gives the result (or the refusal) of the queue id
parsed as a number each time, and a ``MessageQueue``'s hash, kept from its creation, is the hash of its
three fields, in this process and after a pickle's round trip (where it is computed anew)."""

from __future__ import annotations

import copy
import pickle

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.client.errors import MQClientError, broker_error
from rocketq.client.message import MessageQueue, SendResult
from rocketq.client.send_outcome import STATUS_BY_CODE, send_answer_fields, send_result
from rocketq.protocol import RemotingCommand
from rocketq.protocol.header_decode import decode_command

ADDRESS = "127.0.0.1:10911"
QUEUE_IDS = st.one_of(st.integers(0, 300), st.integers(-5, 2**40))
QUEUE_ID_TEXTS = st.one_of(
    st.none(),
    st.integers(-(2**40), 2**40).map(str),
    st.integers(0, 300).map(str),
    st.sampled_from(["03", "+3", " 3", "3 ", "-0", "1_0", "x", "", "٣"]),
)


def parsed_each_time(response: RemotingCommand, queue: MessageQueue, unique_id: str, address: str) -> SendResult:
    """``send_result`` as it was: the answer's queue id parsed as a number whatever its text."""
    status = STATUS_BY_CODE.get(response.code)
    if status is None:
        raise broker_error(response.code, response.remark, address)
    offset_ids, queue_id, offset = send_answer_fields(response, address)
    try:
        if queue_id is not None and int(queue_id) != queue.queue_id:
            queue = MessageQueue(queue.topic, queue.broker_name, int(queue_id))
        queue_offset = -1 if offset is None else int(offset)
    except ValueError as exc:
        raise MQClientError(f"malformed send response from {address}: {exc}") from exc
    return SendResult(status, unique_id, "" if offset_ids is None else offset_ids, queue, queue_offset)


def outcome(
    read: object, response: RemotingCommand, queue: MessageQueue
) -> tuple[str, object, tuple[str, str, int] | None]:
    try:
        result = read(response, queue, "UNIQ", ADDRESS)  # type: ignore[operator]
    except Exception as exc:  # (the refusal: its type and what it says)
        return type(exc).__name__, str(exc), None
    answered = result.message_queue
    return "value", result, (answered.topic, answered.broker_name, answered.queue_id)


@settings(max_examples=400, deadline=None)
@given(
    code=st.sampled_from([0, 10, 11, 12, 1, 17]),
    queue_id=QUEUE_IDS,
    queue_id_text=QUEUE_ID_TEXTS,
    offset_text=st.one_of(st.none(), st.integers(-1, 2**50).map(str), st.just("x")),
)
def test_the_answers_queue_compared_as_text_is_the_queue_parsed(
    code: int, queue_id: int, queue_id_text: str | None, offset_text: str | None
) -> None:
    fields = {"msgId": "7F0000010000"}
    if queue_id_text is not None:
        fields["queueId"] = queue_id_text
    if offset_text is not None:
        fields["queueOffset"] = offset_text
    text = ",".join(f'"{key}":"{value}"' for key, value in fields.items())
    header = f'{{"code":{code},"extFields":{{{text}}},"flag":1,"language":"JAVA","opaque":9,"version":409}}'
    queue = MessageQueue("TopicA", "broker-a", queue_id)
    for keep_ext_json in (True, False):  # as a client's connection keeps it, and as a dict
        answer = decode_command(0, header.encode(), b"", keep_ext_json=keep_ext_json)
        assert outcome(send_result, answer, queue) == outcome(parsed_each_time, answer, queue)


@given(st.text(max_size=20), st.text(max_size=20), st.integers(-(2**63), 2**63))
def test_a_queues_kept_hash_is_its_fields_hash(topic: str, broker_name: str, queue_id: int) -> None:
    queue = MessageQueue(topic, broker_name, queue_id)
    assert hash(queue) == hash((topic, broker_name, queue_id))
    twin = MessageQueue(topic, broker_name, queue_id)
    assert twin == queue and hash(twin) == hash(queue) and {queue: 1}[twin] == 1
    for copied in (pickle.loads(pickle.dumps(queue)), copy.copy(queue), copy.deepcopy(queue)):
        assert copied == queue and hash(copied) == hash(queue)
    assert repr(queue) == f"MessageQueue(topic={topic!r}, broker_name={broker_name!r}, queue_id={queue_id!r})"
    assert MessageQueue(topic, broker_name, queue_id + 1) != queue
