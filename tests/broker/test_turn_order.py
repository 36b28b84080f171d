"""The order of a broker's answers on a put's turn: a held pull woken by a send is answered before the
send is (the consumer's answer leaves first, docs/consume-path.md), and every request on a connection
is answered once, in order, when sends are written together behind a held pull."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from rocketq.broker.server import Broker
from rocketq.protocol import RemotingCommand, ResponseCode
from rocketq.remoting import RemotingClient
from rocketq.testing import eventually
from rocketq.testing.cluster import wait_dispatched

from .conftest import broker_config
from .raw import pull_request, records, send_request

TOPIC = "TurnOrder"


async def created(client: RemotingClient, broker: Broker) -> None:
    """The topic made by a first message (at offset 0), dispatched: pulls of it are then held."""
    seed = await client.invoke(broker.address, send_request(TOPIC, b"seed"), 10)
    assert seed.code == ResponseCode.SUCCESS
    await wait_dispatched(broker)


async def answered_in_order(
    client: RemotingClient, address: str, requests: list[tuple[str, RemotingCommand]], order: list[str]
) -> dict[str, RemotingCommand]:
    """Invoke ``requests`` together (one loop iteration: one write); each label joins ``order`` as its
    answer is read."""

    async def one(label: str, command: RemotingCommand) -> tuple[str, RemotingCommand]:
        answer = await client.invoke(address, command, 10)
        order.append(label)
        return label, answer

    return dict(await asyncio.gather(*(one(label, command) for label, command in requests)))


async def test_a_held_pull_is_answered_before_the_send_that_woke_it() -> None:
    """One connection holds a pull, then sends: on every round the pull's answer (with the message at
    the offset it waited for) is read before the send's, and nothing is lost."""
    with tempfile.TemporaryDirectory() as root:
        async with Broker(broker_config(Path(root))) as broker:
            assert broker.context is not None
            holds = broker.context.long_polling
            client = RemotingClient()
            try:
                await created(client, broker)
                for offset in range(1, 7):
                    order: list[str] = []
                    pull = asyncio.ensure_future(
                        answered_in_order(
                            client,
                            broker.address,
                            [("pull", pull_request(TOPIC, 0, offset, suspend_ms=30_000))],
                            order,
                        )
                    )
                    await eventually(lambda: holds.held_count == 1)
                    body = b"m%d" % offset
                    sent = await answered_in_order(client, broker.address, [("send", send_request(TOPIC, body))], order)
                    pulled = (await pull)["pull"]
                    assert order == ["pull", "send"]
                    assert sent["send"].code == ResponseCode.SUCCESS
                    assert pulled.code == ResponseCode.SUCCESS
                    assert pulled.ext_fields["nextBeginOffset"] == str(offset + 1)
                    assert [(record.queue_offset, record.body) for record in records(pulled)] == [(offset, body)]
            finally:
                await client.aclose()


async def test_pipelined_sends_behind_a_held_pull_are_all_answered_in_order() -> None:
    """Five sends written together behind a held pull on one connection: six answers, the pull's first
    (its message is the first send's), then the sends' in the order they were sent, at offsets 1-5."""
    with tempfile.TemporaryDirectory() as root:
        async with Broker(broker_config(Path(root))) as broker:
            assert broker.context is not None
            holds = broker.context.long_polling
            client = RemotingClient()
            try:
                await created(client, broker)
                order: list[str] = []
                pull = asyncio.ensure_future(
                    answered_in_order(
                        client, broker.address, [("pull", pull_request(TOPIC, 0, 1, suspend_ms=30_000))], order
                    )
                )
                await eventually(lambda: holds.held_count == 1)
                sends = [(f"send{index}", send_request(TOPIC, b"p%d" % index)) for index in range(5)]
                answers = await answered_in_order(client, broker.address, sends, order)
                pulled = (await pull)["pull"]
                assert order == ["pull", "send0", "send1", "send2", "send3", "send4"]
                assert [int(answers[f"send{index}"].ext_fields["queueOffset"]) for index in range(5)] == list(
                    range(1, 6)
                )
                pulled_records = records(pulled)
                assert pulled_records, "the woken pull carries the message that woke it"
                assert (pulled_records[0].queue_offset, pulled_records[0].body) == (1, b"p0")
            finally:
                await client.aclose()
