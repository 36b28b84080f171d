"""The broker driven with raw protocol requests, as a client library would send them."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from rocketq.broker.server import Broker
from rocketq.common.message import decode_properties, encode_properties
from rocketq.protocol import BatchItem, HeartbeatData, RequestCode, ResponseCode, encode_batch, make_request
from rocketq.protocol.headers import PullMessageResponseHeader, SendMessageRequestHeader, SendMessageResponseHeader
from rocketq.remoting import RemotingClient
from rocketq.remoting.connection import next_opaque
from rocketq.store import FlushDiskType
from rocketq.testing import eventually
from rocketq.testing.cluster import wait_dispatched

from .conftest import broker_config
from .raw import bodies, pull_request, records, request, send_request


async def test_send_then_pull(broker: Broker, client: RemotingClient) -> None:
    sent = await client.invoke(broker.address, send_request("TopicA", b"hello", TAGS="TagA", KEYS="k1"), 3)
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    assert sent.ext_fields["queueOffset"] == "0" and len(sent.ext_fields["msgId"]) == 32
    await wait_dispatched(broker)
    pulled = await client.invoke(broker.address, pull_request("TopicA", 0, 0), 3)
    assert pulled.code == ResponseCode.SUCCESS
    assert bodies(pulled) == [b"hello"]
    assert pulled.ext_fields["nextBeginOffset"] == "1" and pulled.ext_fields["maxOffset"] == "1"
    empty = await client.invoke(broker.address, pull_request("TopicA", 0, 1), 3)
    assert empty.code == ResponseCode.PULL_NOT_FOUND


async def test_send_and_pull_responses_carry_exactly_their_headers(broker: Broker, client: RemotingClient) -> None:
    """The broker writes these headers' fields out (see handlers.send, handlers.pull): the text of each
    field is what the header Struct would write, and nothing is missing or extra."""
    sent = await client.invoke(broker.address, send_request("TopicR", b"x"), 3)
    header = SendMessageResponseHeader.from_ext_fields(sent.ext_fields)
    assert sent.ext_fields == header.to_ext_fields() | {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
    await wait_dispatched(broker)
    pulled = await client.invoke(broker.address, pull_request("TopicR", header.queue_id, 0), 3)
    pull_header = PullMessageResponseHeader.from_ext_fields(pulled.ext_fields)
    assert pulled.ext_fields == pull_header.to_ext_fields()
    assert (pull_header.next_begin_offset, pull_header.min_offset, pull_header.max_offset) == (1, 0, 1)


async def test_c_plus_plus_style_batch_in_code_10(broker: Broker, client: RemotingClient) -> None:
    body = encode_batch([BatchItem(b"one", encode_properties({"TAGS": "a"})), BatchItem(b"two")])
    sent = await client.invoke(broker.address, send_request("TopicB", body, batch=True), 3)
    assert sent.code == ResponseCode.SUCCESS and sent.ext_fields["msgId"].count(",") == 1
    await wait_dispatched(broker)
    pulled = await client.invoke(broker.address, pull_request("TopicB", 0, 0), 3)
    assert bodies(pulled) == [b"one", b"two"]


async def test_batches_through_both_store_paths(broker: Broker, client: RemotingClient) -> None:
    """A plain batch is written from its wire body, one with a delayed item is decoded message by
    message, a malformed one is refused: the stored records carry the same broker properties, the
    ids point at them, and the queue offsets run on across the paths."""
    plain = encode_batch([BatchItem(b"p0", encode_properties({"TAGS": "a", "KEYS": "k0"})), BatchItem(b"p1", "", 7)])
    delayed = encode_batch([BatchItem(b"d1"), BatchItem(b"d0", encode_properties({"DELAY": "1"}))])
    first = await client.invoke(broker.address, send_request("TopicW", plain, batch=True), 3)
    second = await client.invoke(broker.address, send_request("TopicW", delayed, batch=True), 3)
    assert (first.code, second.code) == (ResponseCode.SUCCESS, ResponseCode.SUCCESS)
    assert first.ext_fields["queueOffset"] == "0" and second.ext_fields["queueOffset"] == "2"
    bad = await client.invoke(broker.address, send_request("TopicW", plain[:-3], batch=True), 3)
    assert bad.code == ResponseCode.MESSAGE_ILLEGAL and "bad batch body" in bad.remark
    await wait_dispatched(broker)
    pulled = records(await client.invoke(broker.address, pull_request("TopicW", 0, 0), 3))
    assert [record.body for record in pulled] == [b"p0", b"p1", b"d1"]  # d0 waits in the delay topic
    assert [record.flag for record in pulled[:2]] == [0, 7]
    plain_ids = first.ext_fields["msgId"].split(",")
    for record, message_id in zip(pulled, plain_ids + second.ext_fields["msgId"].split(",")[:1], strict=True):
        assert message_id.endswith(f"{record.physical_offset:016X}")
        properties = decode_properties(record.properties)
        assert properties["CLUSTER"] == broker.config.broker_cluster_name
        assert properties["MSG_REGION"] == "DefaultRegion"
    assert decode_properties(pulled[0].properties) == {
        "TAGS": "a", "KEYS": "k0", "MSG_REGION": "DefaultRegion", "TRACE_ON": "true",
        "CLUSTER": broker.config.broker_cluster_name,
    }  # fmt: skip


async def test_long_polling_wakes_on_arrival(broker: Broker, client: RemotingClient) -> None:
    await client.invoke(broker.address, send_request("TopicC", b"first"), 3)
    await wait_dispatched(broker)
    # held for up to a minute: answered well within the call's timeout only because a message arrived
    held = asyncio.create_task(client.invoke(broker.address, pull_request("TopicC", 0, 1, suspend_ms=60_000), 30))
    await eventually(lambda: broker.context.long_polling.held_count == 1)
    assert not held.done()
    await client.invoke(broker.address, send_request("TopicC", b"second"), 3)
    response = await held
    assert response.code == ResponseCode.SUCCESS and bodies(response) == [b"second"]
    assert broker.context.long_polling.held_count == 0


async def test_long_polling_times_out(broker: Broker, client: RemotingClient) -> None:
    await client.invoke(broker.address, send_request("TopicD", b"x"), 3)
    await wait_dispatched(broker)
    held = asyncio.create_task(client.invoke(broker.address, pull_request("TopicD", 0, 1, suspend_ms=300), 30))
    await eventually(lambda: broker.context.long_polling.held_count == 1 or held.done())
    response = await held  # nothing arrives: the suspend timeout answers it
    assert response.code == ResponseCode.PULL_NOT_FOUND
    assert broker.context.long_polling.held_count == 0


async def test_held_pulls_of_closed_connections_are_dropped_and_others_answered(
    broker: Broker, client: RemotingClient
) -> None:
    await client.invoke(broker.address, send_request("TopicH", b"first"), 3)
    await wait_dispatched(broker)
    assert broker.context is not None
    holds = broker.context.long_polling
    gone = RemotingClient()
    abandoned = asyncio.create_task(gone.invoke(broker.address, pull_request("TopicH", 0, 1, suspend_ms=5000), 10))
    kept = asyncio.create_task(client.invoke(broker.address, pull_request("TopicH", 0, 1, suspend_ms=5000), 10))
    await eventually(lambda: holds.held_count == 2)
    await gone.aclose()  # its held pull now has nobody to answer
    await client.invoke(broker.address, send_request("TopicH", b"second"), 3)
    response = await kept
    assert response.code == ResponseCode.SUCCESS and bodies(response) == [b"second"]
    assert holds.held_count == 0
    assert abandoned.done() and abandoned.exception() is not None  # failed with its connection, not answered


async def test_held_pull_is_answered_when_the_broker_closes(tmp_path: Path) -> None:
    broker = Broker(broker_config(tmp_path))
    await broker.start()
    client = RemotingClient()
    try:
        await client.invoke(broker.address, send_request("TopicI", b"x"), 3)
        await wait_dispatched(broker)
        held = asyncio.create_task(client.invoke(broker.address, pull_request("TopicI", 0, 1, suspend_ms=30_000), 40))
        assert broker.context is not None
        long_polling = broker.context.long_polling
        await eventually(lambda: long_polling.held_count == 1)
        await broker.aclose()
        response = await asyncio.wait_for(held, 5)
        assert response.code == ResponseCode.PULL_NOT_FOUND
    finally:
        await client.aclose()


async def test_tag_filter(broker: Broker, client: RemotingClient) -> None:
    for tag in ("TagA", "TagB", "TagA"):
        await client.invoke(broker.address, send_request("TopicE", tag.encode(), TAGS=tag), 3)
    await wait_dispatched(broker)
    pulled = await client.invoke(broker.address, pull_request("TopicE", 0, 0, expression="TagA"), 3)
    assert bodies(pulled) == [b"TagA", b"TagA"] and pulled.ext_fields["nextBeginOffset"] == "3"
    none = await client.invoke(broker.address, pull_request("TopicE", 0, 0, expression="TagZ"), 3)
    assert none.code == ResponseCode.PULL_RETRY_IMMEDIATELY


async def test_offset_moved_and_unknown_topic(broker: Broker, client: RemotingClient) -> None:
    await client.invoke(broker.address, send_request("TopicF", b"x"), 3)
    await wait_dispatched(broker)
    moved = await client.invoke(broker.address, pull_request("TopicF", 0, 99), 3)
    assert moved.code == ResponseCode.PULL_OFFSET_MOVED and moved.ext_fields["nextBeginOffset"] == "1"
    unknown = await client.invoke(broker.address, pull_request("NoSuchTopic", 0, 0), 3)
    assert unknown.code == ResponseCode.TOPIC_NOT_EXIST


async def test_oversized_message_is_refused(broker: Broker, client: RemotingClient) -> None:
    response = await client.invoke(broker.address, send_request("TopicG", bytes(4 * 1024 * 1024 + 1)), 10)
    assert response.code == ResponseCode.MESSAGE_ILLEGAL
    ok = await client.invoke(broker.address, send_request("TopicG", b"small"), 3)
    assert ok.code == ResponseCode.SUCCESS


async def test_sends_to_the_schedule_topic_or_bad_names_are_refused(broker: Broker, client: RemotingClient) -> None:
    scheduled = await client.invoke(broker.address, send_request("SCHEDULE_TOPIC_XXXX", b"x"), 3)
    assert scheduled.code == ResponseCode.NO_PERMISSION and "forbidden" in (scheduled.remark or "")
    bad = await client.invoke(broker.address, send_request("no spaces", b"x"), 3)
    assert bad.code == ResponseCode.SYSTEM_ERROR and "characters outside" in (bad.remark or "")
    sent = await client.invoke(broker.address, send_request("TopicFine", b"x"), 3)  # and it goes on serving
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    # names the broker has already accepted do not let others through, and each is checked every time
    for name in ("no spaces", "TopicFine.", broker.config.broker_cluster_name, "TopicFine"):
        again = await client.invoke(broker.address, send_request(name, b"x"), 3)
        if name == "TopicFine":
            assert again.code == ResponseCode.SUCCESS, again.remark
        else:
            assert again.code == ResponseCode.SYSTEM_ERROR, name
            assert "characters outside" in (again.remark or "") or "cluster's name" in (again.remark or "")


async def test_send_headers_long_short_and_invalid(broker: Broker, client: RemotingClient) -> None:
    """The send header is read in its long form (code 10) and its one-letter form (310); a value that
    is not a number is refused naming the wire field, and the broker goes on serving."""
    long_form = send_request("TopicH", b"long")
    short_form = request(
        RequestCode.SEND_MESSAGE_V2,
        SendMessageRequestHeader.from_ext_fields(long_form.ext_fields).to_v2().to_ext_fields(),
        b"short",
    )
    bad = request(RequestCode.SEND_MESSAGE_V2, {**short_form.ext_fields, "e": "first"}, b"bad")
    answers = [await client.invoke(broker.address, command, 3) for command in (long_form, short_form, bad)]
    assert [answer.code for answer in answers[:2]] == [ResponseCode.SUCCESS, ResponseCode.SUCCESS]
    assert [answer.ext_fields["queueOffset"] for answer in answers[:2]] == ["0", "1"]
    assert answers[2].code == ResponseCode.SYSTEM_ERROR
    assert answers[2].remark == "invalid SendMessageRequestHeaderV2: Expected `int`, got `str` - at `$.e`"
    await wait_dispatched(broker)
    assert bodies(await client.invoke(broker.address, pull_request("TopicH", 0, 0), 3)) == [b"long", b"short"]


async def test_heartbeat_creates_retry_topic_and_lists_consumers(broker: Broker, client: RemotingClient) -> None:
    body = (
        b'{"clientID":"1-127.0.0.1@DEFAULT","consumerDataSet":[{"consumeFromWhere":0,"consumeType":1,'
        b'"groupName":"CG_TEST","messageModel":1,"subscriptionDataSet":[{"subString":"TagA || TagB",'
        b'"subVersion":"1795296764913","topic":"TopicH","codeSet":[0,0]}]}]}'
    )
    assert HeartbeatData.decode(body).client_id == "1-127.0.0.1@DEFAULT"
    response = await client.invoke(
        broker.address, make_request(RequestCode.HEART_BEAT, opaque=next_opaque(), body=body), 3
    )
    assert response.code == ResponseCode.SUCCESS
    assert broker.topics.get("%RETRY%CG_TEST") is not None
    subscription = broker.clients.subscription("CG_TEST", "TopicH")
    assert subscription is not None and subscription.tags == {"TagA", "TagB"} and 0 not in subscription.codes
    listed = await client.invoke(
        broker.address,
        make_request(
            RequestCode.GET_CONSUMER_LIST_BY_GROUP, opaque=next_opaque(), ext_fields={"consumerGroup": "CG_TEST"}
        ),
        3,
    )
    assert listed.code == ResponseCode.SUCCESS and b"1-127.0.0.1@DEFAULT" in bytes(listed.body)


async def test_bad_clients_do_not_disturb_the_broker(broker: Broker, client: RemotingClient) -> None:
    host, port = broker.address.rsplit(":", 1)
    garbage = [
        b"\xff\xff\xff\xff" + b"x" * 8,  # negative length
        (1 << 30).to_bytes(4, "big") + b"\x00\x00\x00\x02{}",  # frame far over the limit
        (12).to_bytes(4, "big") + (8).to_bytes(4, "big") + b"not json",  # a header that is not JSON
        (6).to_bytes(4, "big") + b"\x09\x00\x00\x02{}",  # unknown serialization type
    ]
    silent = await asyncio.open_connection(host, int(port))  # connects and says nothing
    for payload in garbage:
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(payload)
        await writer.drain()
        async with asyncio.timeout(3):
            assert await reader.read() == b""  # the broker closed that connection
        writer.close()
    _, half = await asyncio.open_connection(host, int(port))
    half.write((500).to_bytes(4, "big") + b"\x00\x00\x00")  # disconnects mid-frame
    await half.drain()
    half.close()
    unknown = await client.invoke(broker.address, make_request(9999, opaque=next_opaque()), 3)
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    sent = await client.invoke(broker.address, send_request("StillServing", b"ok"), 3)
    assert sent.code == ResponseCode.SUCCESS
    silent[1].close()


async def test_pull_without_subscription_uses_the_heartbeat_one(broker: Broker, client: RemotingClient) -> None:
    """Java push consumers pull with no subscription (sysFlag 2/3): the broker filters with the one
    the group's heartbeat registered."""
    for tag in ("TagA", "TagB", "TagA"):
        await client.invoke(broker.address, send_request("TopicJ", tag.encode(), TAGS=tag), 3)
    await wait_dispatched(broker)
    no_subscription = dict(pull_request("TopicJ", 0, 0, group="JG").ext_fields, sysFlag="0", subscription="")
    unknown = await client.invoke(
        broker.address, make_request(RequestCode.PULL_MESSAGE, opaque=next_opaque(), ext_fields=no_subscription), 3
    )
    assert unknown.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    heartbeat = (
        b'{"clientID":"java@1","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",'
        b'"consumeType":"CONSUME_PASSIVELY","groupName":"JG","messageModel":"CLUSTERING",'
        b'"subscriptionDataSet":[{"subString":"TagA","subVersion":1,"topic":"TopicJ"}]}]}'
    )
    await client.invoke(broker.address, make_request(RequestCode.HEART_BEAT, opaque=next_opaque(), body=heartbeat), 3)
    pulled = await client.invoke(
        broker.address, make_request(RequestCode.PULL_MESSAGE, opaque=next_opaque(), ext_fields=no_subscription), 3
    )
    assert pulled.code == ResponseCode.SUCCESS and bodies(pulled) == [b"TagA", b"TagA"]


async def test_sync_flush_answers_after_the_fsync(tmp_path: Path, client: RemotingClient) -> None:
    async with Broker(broker_config(tmp_path / "sync", flush_disk_type=FlushDiskType.SYNC_FLUSH)) as sync_broker:
        response = await client.invoke(sync_broker.address, send_request("Durable", b"on disk", WAIT="true"), 5)
        assert response.code == ResponseCode.SUCCESS
        store = sync_broker.store
        assert store.commit_log.files.flushed_where >= store.commit_log.max_offset  # fsynced before the answer


async def test_sync_flush_concurrent_sends_share_fsyncs(tmp_path: Path, client: RemotingClient) -> None:
    async with Broker(broker_config(tmp_path / "group", flush_disk_type=FlushDiskType.SYNC_FLUSH)) as sync_broker:
        store = sync_broker.store
        fsyncs_before = store.flusher.flush_count

        async def send(n: int) -> int:
            response = await client.invoke(sync_broker.address, send_request("Grouped", b"m%d" % n, WAIT="true"), 10)
            if response.code == ResponseCode.SUCCESS:  # answered after an fsync that covers the message
                physical_offset = int(response.ext_fields["msgId"][16:], 16)  # offset message id: host, offset
                assert store.commit_log.files.flushed_where > physical_offset
            return response.code

        codes = []
        for _ in range(5):  # rounds of 32 sends in flight at once
            codes += await asyncio.gather(*(send(n) for n in range(32)))
        assert codes == [ResponseCode.SUCCESS] * 160
        assert store.commit_log.files.flushed_where == store.commit_log.max_offset
        assert store.flusher.flush_count - fsyncs_before < 160  # group commit: fewer fsyncs than sends


async def test_sync_flush_sends_and_batches_across_file_rolls_survive_a_restart(
    tmp_path: Path, client: RemotingClient
) -> None:
    """SYNC_FLUSH puts are written with pwrite (staged), single sends grouped per loop iteration and
    producers' batches from their wire bodies: with 16 KiB CommitLog files both roll files all the
    time. Every acknowledged message is fsynced, comes back in queue order, and is there after a
    restart."""
    config = broker_config(tmp_path / "rolls", flush_disk_type=FlushDiskType.SYNC_FLUSH)
    config = dataclasses.replace(config, mapped_file_size_commit_log=16 * 1024)
    expected: dict[int, dict[int, bytes]] = {0: {}, 1: {}}  # queue -> queue offset -> body
    async with Broker(config) as sync_broker:

        async def send(queue_id: int, number: int) -> None:
            body = b"%d-%d:" % (queue_id, number) + bytes(700)
            if number % 3:
                response = await client.invoke(sync_broker.address, send_request("Rolls", body, queue_id=queue_id), 10)
                stored = [body]
            else:
                stored = [body + b"%d" % item for item in range(6)]
                batch = encode_batch([BatchItem(item) for item in stored])
                response = await client.invoke(
                    sync_broker.address, send_request("Rolls", batch, queue_id=queue_id, batch=True), 10
                )
            assert response.code == ResponseCode.SUCCESS
            first = int(response.ext_fields["queueOffset"])
            expected[queue_id].update(enumerate(stored, start=first))

        for round_number in range(4):  # 32 producers at once per round
            await asyncio.gather(*(send(n % 2, round_number * 32 + n) for n in range(32)))
        store = sync_broker.store
        assert store.commit_log.files.flushed_where == store.commit_log.max_offset
        assert len(store.commit_log.files.files) > 10
    async with Broker(config) as restarted:
        await wait_dispatched(restarted)
        for queue_id, messages in expected.items():
            pulled: list[bytes] = []
            while len(pulled) < len(messages):
                response = await client.invoke(restarted.address, pull_request("Rolls", queue_id, len(pulled)), 3)
                assert response.code == ResponseCode.SUCCESS
                pulled += bodies(response)
            assert pulled == [messages[offset] for offset in range(len(messages))]


async def test_without_long_polling_a_pull_is_held_for_the_short_polling_time(
    tmp_path: Path, client: RemotingClient
) -> None:
    """longPollingEnable=false: shortPollingTimeMills, not the client's minute, answers the pull."""
    config = broker_config(tmp_path / "broker", long_polling_enable=False, short_polling_time_mills=200)
    async with Broker(config) as short:
        await client.invoke(short.address, send_request("TopicS", b"x"), 3)
        await wait_dispatched(short)
        # the call's own timeout (30 s) is half the suspend timeout: only the short hold answers in time
        response = await client.invoke(short.address, pull_request("TopicS", 0, 1, suspend_ms=60_000), 30)
        assert response.code == ResponseCode.PULL_NOT_FOUND
