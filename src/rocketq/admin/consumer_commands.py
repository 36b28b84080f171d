"""``rocketq admin`` commands answered by a consumer group's members themselves, through a broker:
consumerStatus (GET_CONSUMER_RUNNING_INFO) and consumeMessage (CONSUME_MESSAGE_DIRECTLY)."""

from __future__ import annotations

from typing import Any

import click
import msgspec

from rocketq.admin.options import json_option, namesrv_option, run
from rocketq.admin.render import emit, timestamp
from rocketq.client.admin import AdminClient
from rocketq.client.admin_consumers import consume_message_directly, consumer_running_info
from rocketq.protocol.running_info import ConsumerRunningInfo


def info_document(info: ConsumerRunningInfo) -> dict[str, Any]:
    """A member's running info for JSON, with Java's field names (``mqTable`` as a list of
    ``messageQueue`` and ``processQueueInfo``, JSON having no object keys)."""
    return {
        "properties": info.properties,
        "subscriptionSet": msgspec.to_builtins(info.subscription_set),
        "mqTable": [
            {
                "messageQueue": {"topic": e.topic, "brokerName": e.broker_name, "queueId": e.queue_id},
                "processQueueInfo": msgspec.to_builtins(e.info),
            }
            for e in info.mq_table
        ],
        "statusTable": msgspec.to_builtins(info.status_table),
        "jstack": info.jstack,
    }


def _show_member(info: ConsumerRunningInfo) -> None:
    emit(False, dict(sorted(info.properties.items())))
    click.echo("")
    emit(
        False,
        {},
        ["topic", "expression", "type", "subVersion"],
        [[s.topic, s.sub_string, s.expression_type, s.sub_version] for s in info.subscription_set],
    )
    click.echo("")
    headers = ["topic", "broker", "queue", "commitOffset", "cachedMin", "cachedMax", "cached", "MiB", "locked"]
    rows: list[list[Any]] = [
        [
            e.topic,
            e.broker_name,
            e.queue_id,
            e.info.commit_offset,
            e.info.cached_msg_min_offset,
            e.info.cached_msg_max_offset,
            e.info.cached_msg_count,
            e.info.cached_msg_size_in_mi_b,
            e.info.locked,
        ]
        for e in info.mq_table
    ]
    emit(
        False,
        {},
        [*headers, "lastPull", "lastConsume"],
        [
            [*row, timestamp(e.info.last_pull_timestamp), timestamp(e.info.last_consume_timestamp)]
            for row, e in zip(rows, info.mq_table, strict=True)
        ],
    )
    click.echo("")
    status_headers = ["topic", "pullRT", "pullTPS", "consumeRT", "consumeOKTPS", "consumeFailedTPS", "failedMsgs"]
    status_rows = [
        [t, s.pull_rt, s.pull_tps, s.consume_rt, s.consume_ok_tps, s.consume_failed_tps, s.consume_failed_msgs]
        for t, s in sorted(info.status_table.items())
    ]
    emit(False, {}, status_headers, status_rows)
    if info.jstack:
        click.echo("")
        click.echo(info.jstack)


@click.command("consumerStatus")
@namesrv_option
@click.option("-g", "--group", required=True)
@click.option("-i", "--client-id", help="one member (default: every member online, in a table)")
@click.option("-s", "--jstack", is_flag=True, help="also the member's thread stacks")
@json_option
def consumer_status(namesrv: str, group: str, client_id: str | None, jstack: bool, as_json: bool) -> None:
    """What a group's members are doing, from each member itself: settings, subscriptions, every assigned
    queue's state (offsets, cached messages, lock) and pull/consume rates per topic."""

    async def status(admin: AdminClient) -> dict[str, ConsumerRunningInfo]:
        members = (
            [client_id] if client_id else [c.client_id for c in (await admin.consumer_connection(group)).connection_set]
        )
        return {member: await consumer_running_info(admin, group, member, jstack=jstack) for member in sorted(members)}

    infos = run(namesrv, status)
    if as_json:
        documents = {member: info_document(info) for member, info in infos.items()}
        emit(True, documents[client_id] if client_id else documents)
        return
    if client_id:
        _show_member(infos[client_id])
        return
    rows = []
    for member, info in infos.items():
        rows.append(
            [
                member,
                info.properties.get("PROP_CLIENT_VERSION", ""),
                info.properties.get("PROP_CONSUME_TYPE", ""),
                ", ".join(f"{s.topic}:{s.sub_string}" for s in info.subscription_set),
                len(info.mq_table),
                round(sum(s.pull_tps for s in info.status_table.values()), 2),
                round(sum(s.consume_ok_tps for s in info.status_table.values()), 2),
                sum(s.consume_failed_msgs for s in info.status_table.values()),
            ]
        )
    emit(
        False, {}, ["clientId", "version", "type", "subscriptions", "queues", "pullTPS", "consumeOKTPS", "failed"], rows
    )
    subscriptions = {tuple((s.topic, s.sub_string) for s in info.subscription_set) for info in infos.values()}
    click.echo(f"\nsame subscriptions on every member: {'yes' if len(subscriptions) <= 1 else 'NO'}")


@click.command("consumeMessage")
@namesrv_option
@click.option("-g", "--group", required=True)
@click.option("-d", "--client-id", required=True, help="the member to consume it (consumerConnection lists them)")
@click.option("-i", "--msg-id", required=True, help="the message's offset id (a send's offsetMsgId)")
@json_option
def consume_message(namesrv: str, group: str, client_id: str, msg_id: str, as_json: bool) -> None:
    """Have one member of a push consumer group run its listener on one message, and say how it went
    (nothing is committed or sent back)."""
    result = run(namesrv, lambda a: consume_message_directly(a, group, client_id, msg_id))
    emit(as_json, msgspec.to_builtins(result))


CONSUMER_COMMANDS = (consumer_status, consume_message)
