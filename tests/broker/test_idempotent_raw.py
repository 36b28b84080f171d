"""Idempotent sends as raw requests (the rocketq-only ``rqIdempotent`` ext field), in the long header of
code 10 that C++ clients send, single and batched, and the errors of a marked send."""

from __future__ import annotations

from rocketq.broker.server import Broker
from rocketq.common.message import encode_properties
from rocketq.protocol import BatchItem, RemotingCommand, ResponseCode, encode_batch
from rocketq.protocol.headers import IDEMPOTENT_SEND_FIELD
from rocketq.remoting import RemotingClient
from rocketq.testing import eventually

from .raw import send_request


def marked(request: RemotingCommand) -> RemotingCommand:
    request.ext_fields[IDEMPOTENT_SEND_FIELD] = "true"
    return request


async def test_a_marked_repeat_in_the_long_header_is_answered_with_the_first_store(
    broker: Broker, client: RemotingClient
) -> None:
    answers = [
        await client.invoke(broker.address, marked(send_request("TopicI", b"x", queue_id=q, UNIQ_KEY="U1")), 10)
        for q in (0, 1)  # the repeat names another queue: still the same message
    ]
    assert [a.code for a in answers] == [ResponseCode.SUCCESS] * 2
    assert answers[0].ext_fields == answers[1].ext_fields
    await eventually(lambda: broker.store.get_max_offset_in_queue("TopicI", 0) == 1)  # dispatched after the answer
    assert broker.store.get_max_offset_in_queue("TopicI", 1) == 0
    plain = await client.invoke(broker.address, send_request("TopicI", b"x", UNIQ_KEY="U1"), 10)
    assert plain.ext_fields["msgId"] != answers[0].ext_fields["msgId"]  # not marked: stored again


async def test_a_marked_batch_in_code_10(broker: Broker, client: RemotingClient) -> None:
    """A repeat of a batch is answered with its first store; a batch that only starts the same is stored."""
    body = encode_batch([BatchItem(b"one", encode_properties({"UNIQ_KEY": f"B{i}"})) for i in range(3)])
    first = await client.invoke(broker.address, marked(send_request("TopicJ", body, batch=True)), 10)
    again = await client.invoke(broker.address, marked(send_request("TopicJ", body, batch=True)), 10)
    assert first.code == again.code == ResponseCode.SUCCESS
    assert first.ext_fields["msgId"].count(",") == 2 and again.ext_fields == first.ext_fields
    await eventually(lambda: broker.store.get_max_offset_in_queue("TopicJ", 0) == 3)  # dispatched after the answer
    other = encode_batch([BatchItem(b"one", encode_properties({"UNIQ_KEY": key})) for key in ("B0", "X1")])
    different = await client.invoke(broker.address, marked(send_request("TopicJ", other, batch=True)), 10)
    assert different.code == ResponseCode.SUCCESS and different.ext_fields["queueOffset"] == "3"  # no repeat
    await eventually(lambda: broker.store.get_max_offset_in_queue("TopicJ", 0) == 5)  # dispatched after the answer


async def test_a_marked_send_without_a_unique_key_is_refused(broker: Broker, client: RemotingClient) -> None:
    answer = await client.invoke(broker.address, marked(send_request("TopicK", b"x", KEYS="k")), 10)
    assert answer.code == ResponseCode.MESSAGE_ILLEGAL
    assert answer.remark == "an idempotent send needs a UNIQ_KEY property on every message"
    body = encode_batch([BatchItem(b"a", encode_properties({"UNIQ_KEY": "C1"})), BatchItem(b"b")])
    batch = await client.invoke(broker.address, marked(send_request("TopicK", body, batch=True)), 10)
    assert batch.code == ResponseCode.MESSAGE_ILLEGAL
    assert broker.store.get_max_offset_in_queue("TopicK", 0) == 0
    broken = marked(send_request("TopicK", b"x", UNIQ_KEY="U"))
    del broken.ext_fields["topic"]
    answer = await client.invoke(broker.address, broken, 10)
    assert answer.code == ResponseCode.SYSTEM_ERROR and "topic" in (answer.remark or "")  # the send handler's
