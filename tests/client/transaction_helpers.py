"""What the transaction tests share: reading every visible message of a topic, a raw END_TRANSACTION
(what a retried or late answer sends), and the state callbacks."""

from __future__ import annotations

import asyncio
import time

from rocketq.client import ConsumeFromWhere, MQClientError, PullConsumer, TransactionSendResult
from rocketq.client.admin import AdminClient
from rocketq.client.message import MessageExt
from rocketq.common.message_id import parse_offset_message_id
from rocketq.protocol import RemotingCommand, RequestCode, make_request
from rocketq.protocol.headers import EndTransactionRequestHeader
from rocketq.remoting import RemotingClient
from rocketq.remoting.connection import next_opaque
from rocketq.testing import LocalCluster

from .helpers import Cluster, consumer_config


async def visible(cluster: Cluster, topic: str, at_least: int = 0) -> list[MessageExt]:
    """Every message of ``topic`` a consumer can read now, from every queue's start; with ``at_least``,
    once the broker has dispatched that many (a commit's messages reach the queues just after it)."""
    if isinstance(cluster, LocalCluster):
        await cluster.wait_dispatched()
    async with AdminClient(cluster.namesrv_addr) as admin, asyncio.timeout(10):
        while True:  # a topic the broker just created reaches the name servers soon after
            try:
                statuses = await admin.topic_status(topic)
            except MQClientError:
                await asyncio.sleep(0.05)
                continue
            if sum(status.max_offset - status.min_offset for status in statuses) >= at_least:
                break
            await asyncio.sleep(0.05)
    expected = sum(status.max_offset - status.min_offset for status in statuses)
    if not expected:
        return []
    config = consumer_config(
        cluster, f"Reader{time.monotonic_ns()}", consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    )
    consumer = PullConsumer(config, auto_commit=False)
    await consumer.start()
    try:
        await consumer.assign(await consumer.fetch_queues(topic))
        found: list[MessageExt] = []
        async with asyncio.timeout(15):
            while len(found) < expected:
                found.extend(await consumer.poll(0.2))
        return found
    finally:
        await consumer.aclose()


def bodies(messages: list[MessageExt]) -> list[bytes]:
    return sorted(message.body for message in messages)


async def end_again(
    address: str, group: str, result: TransactionSendResult, state: int, *, from_check: bool = False
) -> RemotingCommand:
    """END_TRANSACTION for ``result``'s half message once more, as a retrying or late client sends it
    (not oneway, so the broker's answer can be checked)."""
    _, _, commit_log_offset = parse_offset_message_id(result.offset_msg_id)
    fields = EndTransactionRequestHeader(
        producer_group=group,
        tran_state_table_offset=result.queue_offset,
        commit_log_offset=commit_log_offset,
        commit_or_rollback=state,
        from_transaction_check=from_check,
        msg_id=result.msg_id,
        transaction_id=result.msg_id,
    ).to_ext_fields()
    client = RemotingClient()
    try:
        request = make_request(RequestCode.END_TRANSACTION, opaque=next_opaque(), ext_fields=fields)
        return await client.invoke(address, request, 5)
    finally:
        await client.aclose()
