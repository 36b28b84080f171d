"""SQL92 filtering on the broker, driven with raw requests: what it accepts, what it refuses and why,
groupless pulls that carry their expression, and consumerFilter.json across a restart."""

from __future__ import annotations

import json
from pathlib import Path

from rocketq.broker.server import Broker
from rocketq.client.message import MessageQueue, decode_messages
from rocketq.client.pull import pull_request as client_pull_request
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.protocol.bodies import (
    CheckClientRequestBody,
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    SubscriptionData,
)
from rocketq.remoting import RemotingClient
from rocketq.testing.cluster import wait_dispatched

from .conftest import broker_config
from .raw import request, send_request

TOPIC = "SqlTopic"


def heartbeat(group: str, expression: str, expression_type: str = "SQL92", version: int = 1) -> RemotingCommand:
    subscription = SubscriptionData(
        topic=TOPIC, sub_string=expression, sub_version=version, expression_type=expression_type
    )
    consumer = ConsumerData(
        group_name=group,
        consume_type=ConsumeType.CONSUME_ACTIVELY,
        message_model=MessageModel.CLUSTERING,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        subscription_data_set=[subscription],
    )
    body = HeartbeatData(client_id=f"client-{group}", consumer_data_set=[consumer]).encode()
    return request(RequestCode.HEART_BEAT, body=body)


def sql_pull(expression: str, offset: int = 0, group: str = "READER") -> RemotingCommand:
    """A groupless reader's pull: subscription flag set, expression type SQL92, no heartbeat before."""
    queue = MessageQueue(TOPIC, "broker-a", 0)
    return client_pull_request(group, queue, offset, 32, expression, expression_type="SQL92")


async def send_numbered(broker: Broker, client: RemotingClient, count: int) -> None:
    for i in range(count):
        tag = "even" if i % 2 == 0 else "odd"
        sent = await client.invoke(broker.address, send_request(TOPIC, str(i).encode(), TAGS=tag, n=str(i)), 3)
        assert sent.code == ResponseCode.SUCCESS, sent.remark
    await wait_dispatched(broker)


async def test_a_groupless_sql_pull_gets_exactly_the_matches(tmp_path: Path) -> None:
    async with Broker(broker_config(tmp_path, enable_property_filter=True)) as broker:
        client = RemotingClient()
        try:
            await send_numbered(broker, client, 40)
            pulled = await client.invoke(broker.address, sql_pull("n >= 10 AND n < 20 AND TAGS = 'odd'"), 3)
            assert pulled.code == ResponseCode.SUCCESS, pulled.remark
            assert [m.body for m in decode_messages(pulled.body)] == [b"11", b"13", b"15", b"17", b"19"]
            assert int(pulled.ext_fields["nextBeginOffset"]) == 40  # scanned past what did not match
            again = await client.invoke(broker.address, sql_pull("n >= 100", 0), 3)
            assert again.code == ResponseCode.PULL_RETRY_IMMEDIATELY  # nothing matched: go on from 40
            assert again.ext_fields["nextBeginOffset"] == "40"
            assert broker.filters.get(TOPIC, "READER") is None  # nothing registered for the reader
        finally:
            await client.aclose()


async def test_malformed_expressions_are_refused_with_the_parse_error(tmp_path: Path) -> None:
    async with Broker(broker_config(tmp_path, enable_property_filter=True)) as broker:
        client = RemotingClient()
        try:
            await send_numbered(broker, client, 1)
            refused = await client.invoke(broker.address, heartbeat("BAD", "a > 'x'"), 3)
            assert refused.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
            assert "'x'" in refused.remark and "cannot be compared" in refused.remark
            assert broker.clients.consumers.get("BAD") is None and broker.filters.get(TOPIC, "BAD") is None
            pulled = await client.invoke(broker.address, sql_pull("a BETWEEN 3 AND"), 3)
            assert pulled.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
            assert "expected a value" in pulled.remark
            unknown = await client.invoke(broker.address, heartbeat("XP", "/a", expression_type="XPATH"), 3)
            assert unknown.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED and "XPATH" in unknown.remark
            good = await client.invoke(broker.address, heartbeat("GOOD", "a > 1"), 3)
            assert good.code == ResponseCode.SUCCESS  # and the broker goes on serving
        finally:
            await client.aclose()


async def test_sql_is_refused_unless_the_property_filter_is_enabled(tmp_path: Path) -> None:
    async with Broker(broker_config(tmp_path)) as broker:  # enablePropertyFilter defaults to false
        client = RemotingClient()
        try:
            await send_numbered(broker, client, 2)
            pulled = await client.invoke(broker.address, sql_pull("n > 0"), 3)
            assert pulled.code == ResponseCode.SYSTEM_ERROR
            assert "enablePropertyFilter=false" in pulled.remark
            refused = await client.invoke(broker.address, heartbeat("G", "n > 0"), 3)
            assert refused.code == ResponseCode.SYSTEM_ERROR and "enablePropertyFilter" in refused.remark
            body = CheckClientRequestBody(
                client_id="c",
                group="G",
                subscription_data=SubscriptionData(topic=TOPIC, sub_string="n > 0", expression_type="SQL92"),
            )
            checked = await client.invoke(
                broker.address, request(RequestCode.CHECK_CLIENT_CONFIG, body=body.encode()), 3
            )
            assert checked.code == ResponseCode.SYSTEM_ERROR
            tags = CheckClientRequestBody(
                client_id="c", group="G", subscription_data=SubscriptionData(topic=TOPIC, sub_string="a")
            )
            fine = await client.invoke(broker.address, request(RequestCode.CHECK_CLIENT_CONFIG, body=tags.encode()), 3)
            assert fine.code == ResponseCode.SUCCESS  # tags need nothing enabled
        finally:
            await client.aclose()


async def test_sql_subscriptions_are_kept_in_consumer_filter_json_across_a_restart(tmp_path: Path) -> None:
    config = broker_config(tmp_path, enable_property_filter=True)
    async with Broker(config) as broker:
        client = RemotingClient()
        try:
            assert (await client.invoke(broker.address, heartbeat("G1", "n > 3", version=7), 3)).code == 0
            data = broker.filters.get(TOPIC, "G1")
            assert data is not None and not data.dead and data.client_version == 7
        finally:
            await client.aclose()
    document = json.loads((tmp_path / "config" / "consumerFilter.json").read_text())
    saved = document["filterDataByTopic"][TOPIC]["groupFilterData"]["G1"]
    assert saved["expression"] == "n > 3" and saved["expressionType"] == "SQL92" and saved["clientVersion"] == 7
    assert saved["bloomFilterData"]["bitNum"] == 112 and len(saved["bloomFilterData"]["bitPos"]) == 3
    async with Broker(config) as broker:
        reloaded = broker.filters.get(TOPIC, "G1")
        assert reloaded is not None and reloaded.expression == "n > 3"
        assert reloaded.dead  # until the group heartbeats again, as RocketMQ has it
        assert reloaded.selector.matches({"n": "4"}) and not reloaded.selector.matches({"n": "3"})
        client = RemotingClient()
        try:
            assert (await client.invoke(broker.address, heartbeat("G1", "n > 3", version=7), 3)).code == 0
            revived = broker.filters.get(TOPIC, "G1")
            assert revived is not None and not revived.dead
        finally:
            await client.aclose()


async def test_bit_maps_and_filter_data_survive_a_restart(tmp_path: Path) -> None:
    config = broker_config(
        tmp_path,
        enable_property_filter=True,
        enable_calc_filter_bit_map=True,
        enable_consume_queue_ext=True,
        mapped_file_size_consume_queue_ext=64 * 1024,
    )
    expression = "n >= 30 AND TAGS = 'odd'"

    def has_group_bits(broker: Broker, offset: int) -> bool:
        queue, data = broker.store.find_consume_queue(TOPIC, 0), broker.filters.get(TOPIC, "G")
        assert queue is not None and queue.ext is not None and data is not None
        entry = queue.entry(offset)
        assert entry is not None
        unit = queue.ext.read(entry[2])
        assert unit is not None, f"entry {offset} has no ext unit"
        return broker.filters.bloom.is_hit(data.bloom, unit[2])

    async def pulled(broker: Broker, client: RemotingClient) -> list[bytes]:
        bodies, offset = [], 0
        while True:
            response = await client.invoke(broker.address, sql_pull(expression, offset, group="G"), 3)
            if response.code == ResponseCode.SUCCESS:
                bodies.extend(m.body for m in decode_messages(response.body))
            elif response.code != ResponseCode.PULL_RETRY_IMMEDIATELY:
                return bodies
            offset = int(response.ext_fields["nextBeginOffset"])

    async with Broker(config) as broker:
        client = RemotingClient()
        try:
            assert (await client.invoke(broker.address, heartbeat("G", expression), 3)).code == ResponseCode.SUCCESS
            await send_numbered(broker, client, 40)
            data = broker.filters.get(TOPIC, "G")
            assert data is not None and data.born_offset >= 0
            born = data.born_offset
            assert has_group_bits(broker, 31) and not has_group_bits(broker, 5) and not has_group_bits(broker, 32)
            assert await pulled(broker, client) == [str(n).encode() for n in range(31, 40, 2)]
        finally:
            await client.aclose()
    async with Broker(config) as broker:  # no heartbeat yet: the loaded subscription still gets bits
        client = RemotingClient()
        try:
            reloaded = broker.filters.get(TOPIC, "G")
            assert reloaded is not None and reloaded.born_offset == born and reloaded.dead
            for i in range(40, 50):
                tag = "even" if i % 2 == 0 else "odd"
                await client.invoke(broker.address, send_request(TOPIC, str(i).encode(), TAGS=tag, n=str(i)), 3)
            await wait_dispatched(broker)
            assert has_group_bits(broker, 31) and has_group_bits(broker, 41) and not has_group_bits(broker, 42)
            assert await pulled(broker, client) == [str(n).encode() for n in range(31, 50, 2)]
        finally:
            await client.aclose()
