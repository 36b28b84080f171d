"""A held pull woken by the message it waits for is answered from the record the put just wrote
(``HeldPull.answer``); it must be the answer a fresh pull at the same offset gets from the store's
general read: the same code, offsets, suggested broker and bytes, whatever the filter (tag filters on
the fast path, SQL92 through the general read), the records before it and the pull's size. Several
consumers held on one queue are each answered by their own filter."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.broker.server import Broker
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.remoting import RemotingClient
from rocketq.testing import eventually
from rocketq.testing.cluster import wait_dispatched

from .conftest import broker_config
from .raw import records, request, send_request

TOPIC = "HeldTopic"
EXPRESSIONS = st.sampled_from(
    [("TAG", "*"), ("TAG", "TagA"), ("TAG", "TagB || TagC"), ("SQL92", "i >= 2"), ("SQL92", "TAGS = 'TagA'")]
)


def pull(offset: int, expression: tuple[str, str], *, suspend_ms: int, max_msg_nums: int = 32) -> RemotingCommand:
    expression_type, text = expression
    header = PullMessageRequestHeader(
        consumer_group="CG",
        topic=TOPIC,
        queue_id=0,
        queue_offset=offset,
        max_msg_nums=max_msg_nums,
        sys_flag=4 | (2 if suspend_ms else 0),
        commit_offset=0,
        suspend_timeout_millis=suspend_ms,
        subscription=text,
        sub_version=0,
        expression_type=expression_type,
    )
    return request(RequestCode.PULL_MESSAGE, header.to_ext_fields())


async def held_then_fresh(
    before: list[str], arriving: tuple[str, int, int], expression: tuple[str, str], max_msg_nums: int
) -> tuple[RemotingCommand, RemotingCommand]:
    """The answer of a pull held at the end of ``before``'s messages and woken by ``arriving`` (tag, i,
    body size), then a fresh pull's at the same offset."""
    with tempfile.TemporaryDirectory() as root:
        async with Broker(broker_config(Path(root), enable_property_filter=True)) as broker:
            client = RemotingClient()
            try:
                for index, tag in enumerate(before):
                    sent = await client.invoke(broker.address, send_request(TOPIC, b"b%d" % index, TAGS=tag), 3)
                    assert sent.code == ResponseCode.SUCCESS
                await wait_dispatched(broker)
                assert broker.context is not None
                holds = broker.context.long_polling
                offset = len(before)
                waiting = asyncio.create_task(
                    client.invoke(
                        broker.address, pull(offset, expression, suspend_ms=60_000, max_msg_nums=max_msg_nums), 30
                    )
                )
                await eventually(lambda: holds.held_count == 1)
                tag, i, size = arriving
                sent = await client.invoke(broker.address, send_request(TOPIC, b"n" * size, TAGS=tag, i=str(i)), 3)
                assert sent.code == ResponseCode.SUCCESS
                held = await waiting
                fresh = await client.invoke(
                    broker.address, pull(offset, expression, suspend_ms=0, max_msg_nums=max_msg_nums), 3
                )
                return held, fresh
            finally:
                await client.aclose()


@settings(max_examples=12, deadline=None)
@given(
    st.lists(st.sampled_from(["TagA", "TagB"]), min_size=1, max_size=3),
    st.tuples(st.sampled_from(["TagA", "TagB", "TagC"]), st.integers(0, 3), st.integers(1, 5000)),
    EXPRESSIONS,
    st.integers(1, 32),
)
def test_a_woken_pull_is_answered_as_a_fresh_pull_reads(
    before: list[str], arriving: tuple[str, int, int], expression: tuple[str, str], max_msg_nums: int
) -> None:
    held, fresh = asyncio.run(held_then_fresh(before, arriving, expression, max_msg_nums))
    assert (held.code, held.ext_fields, bytes(held.body)) == (fresh.code, fresh.ext_fields, bytes(fresh.body))
    tag, i, _ = arriving
    wanted = {
        "*": True,
        "TagA": tag == "TagA",
        "TagB || TagC": tag in ("TagB", "TagC"),
        "i >= 2": i >= 2,
        "TAGS = 'TagA'": tag == "TagA",
    }[expression[1]]
    got = records(held)
    assert [record.queue_offset for record in got] == ([len(before)] if wanted else [])
    assert held.code == (ResponseCode.SUCCESS if wanted else ResponseCode.PULL_RETRY_IMMEDIATELY)
    assert held.ext_fields["nextBeginOffset"] == held.ext_fields["maxOffset"] == str(len(before) + 1)


async def test_consumers_held_on_one_queue_are_each_answered_by_their_own_filter(tmp_path: Path) -> None:
    async with Broker(broker_config(tmp_path)) as broker:
        client = RemotingClient()
        try:
            await client.invoke(broker.address, send_request(TOPIC, b"zero"), 3)
            await wait_dispatched(broker)
            assert broker.context is not None
            holds = broker.context.long_polling
            expressions = [("TAG", "*"), ("TAG", "*"), ("TAG", "TagA"), ("TAG", "TagB")]
            waiting = [
                asyncio.create_task(client.invoke(broker.address, pull(1, expression, suspend_ms=60_000), 30))
                for expression in expressions
            ]
            await eventually(lambda: holds.held_count == len(expressions))
            await client.invoke(broker.address, send_request(TOPIC, b"one", TAGS="TagA"), 3)
            answers = await asyncio.gather(*waiting)
            assert [[record.body for record in records(answer)] for answer in answers] == [[b"one"]] * 3 + [[]]
            assert [answer.code for answer in answers] == [ResponseCode.SUCCESS] * 3 + [
                ResponseCode.PULL_RETRY_IMMEDIATELY
            ]
            assert {answer.ext_fields["nextBeginOffset"] for answer in answers} == {"2"}
            assert holds.held_count == 0
            pulled = broker.context.consume_rates.totals
            assert pulled[("CG", TOPIC)] == 3  # counted after their answers, each once
        finally:
            await client.aclose()


async def test_a_config_changed_at_run_time_is_what_the_next_pull_reads(tmp_path: Path) -> None:
    """The pull path reads the broker's config once per config object: one replaced at run time
    (UPDATE_BROKER_CONFIG: long polling off, short polls of 50 ms) holds the next pull for its short
    poll instead of the minute it asks for."""
    async with Broker(broker_config(tmp_path)) as broker:
        client = RemotingClient()
        try:
            await client.invoke(broker.address, send_request(TOPIC, b"zero"), 3)
            await wait_dispatched(broker)
            first = await client.invoke(broker.address, pull(0, ("TAG", "*"), suspend_ms=60_000), 3)
            assert first.code == ResponseCode.SUCCESS  # (the config read and kept)
            body = b"longPollingEnable=false\nshortPollingTimeMills=50\n"
            updated = await client.invoke(broker.address, request(RequestCode.UPDATE_BROKER_CONFIG, body=body), 3)
            assert updated.code == ResponseCode.SUCCESS
            # a minute's hold would outlast the call's 10 s: only the short poll answers in time
            answer = await client.invoke(broker.address, pull(1, ("TAG", "*"), suspend_ms=60_000), 10)
            assert answer.code == ResponseCode.PULL_NOT_FOUND
        finally:
            await client.aclose()
