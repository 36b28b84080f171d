"""``rocketq admin <command>`` with the mqadmin names RocketMQ users know."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import click

from rocketq.admin.broker_commands import BROKER_COMMANDS
from rocketq.admin.cluster_commands import CLUSTER_COMMANDS
from rocketq.admin.consumer_commands import CONSUMER_COMMANDS
from rocketq.admin.message_commands import MESSAGE_COMMANDS
from rocketq.admin.options import client_config, json_option, namesrv_option, parse_time, run
from rocketq.admin.render import AdminGroup, emit, timestamp
from rocketq.admin.timing_commands import TIMING_COMMANDS
from rocketq.client import Message, MessageQueue, MQClientError, Producer, ProducerConfig
from rocketq.common.errors import RocketqError
from rocketq.protocol.bodies import SubscriptionGroupConfigBody


@click.group(cls=AdminGroup)
def admin() -> None:
    """Administer a rocketq (or RocketMQ) cluster."""


@admin.command("topicList")
@namesrv_option
@json_option
def topic_list(namesrv: str, as_json: bool) -> None:
    """Every topic the name servers know."""
    topics = run(namesrv, lambda a: a.topic_list())
    emit(as_json, topics, ["topic"], [[t] for t in topics])


@admin.command("topicRoute")
@namesrv_option
@click.option("-t", "--topic", required=True)
@json_option
def topic_route(namesrv: str, topic: str, as_json: bool) -> None:
    """Which brokers serve a topic, with how many queues."""
    route = run(namesrv, lambda a: a.topic_route(topic))
    addresses = {b.broker_name: b.broker_addrs for b in route.broker_datas}
    rows = [
        [q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm, addresses.get(q.broker_name, {}).get(0, "")]
        for q in sorted(route.queue_datas, key=lambda q: q.broker_name)
    ]
    document = {"queueDatas": [list(r) for r in rows], "brokerDatas": dict(addresses)}
    emit(as_json, document, ["broker", "readQueues", "writeQueues", "perm", "master"], rows)


@admin.command("topicStatus")
@namesrv_option
@click.option("-t", "--topic", required=True)
@json_option
def topic_status(namesrv: str, topic: str, as_json: bool) -> None:
    """Min and max offset of every queue of a topic."""
    statuses = run(namesrv, lambda a: a.topic_status(topic))
    rows = [
        [s.queue.broker_name, s.queue.queue_id, s.min_offset, s.max_offset, timestamp(s.last_update_timestamp)]
        for s in statuses
    ]
    document = [dict(broker=r[0], queueId=r[1], minOffset=r[2], maxOffset=r[3], lastUpdated=r[4]) for r in rows]
    emit(as_json, document, ["broker", "queue", "minOffset", "maxOffset", "lastUpdated"], rows)


@admin.command("updateTopic")
@namesrv_option
@click.option("-t", "--topic", required=True)
@click.option("-c", "--cluster", help="create on every master of this cluster")
@click.option("-b", "--broker-addr", help="create on this broker only")
@click.option("-r", "--read-queues", default=8, show_default=True)
@click.option("-w", "--write-queues", default=8, show_default=True)
@click.option("-p", "--perm", default=6, show_default=True, help="2 write, 4 read, 6 both")
@click.option("-o", "--order", is_flag=True)
@json_option
def update_topic(
    namesrv: str,
    topic: str,
    cluster: str | None,
    broker_addr: str | None,
    read_queues: int,
    write_queues: int,
    perm: int,
    order: bool,
    as_json: bool,
) -> None:
    """Create a topic or change its queues and permission."""
    if not cluster and not broker_addr:
        cluster = "DefaultCluster"
    brokers = run(
        namesrv,
        lambda a: a.update_topic(
            topic,
            cluster=cluster,
            broker_addr=broker_addr,
            read_queues=read_queues,
            write_queues=write_queues,
            perm=perm,
            order=order,
        ),
    )
    emit(as_json, {"topic": topic, "brokers": brokers}, ["topic", "broker"], [[topic, b] for b in brokers])


@admin.command("deleteTopic")
@namesrv_option
@click.option("-t", "--topic", required=True)
@click.option("-c", "--cluster", help="delete only in this cluster")
@json_option
def delete_topic(namesrv: str, topic: str, cluster: str | None, as_json: bool) -> None:
    """Delete a topic from the brokers and the name servers. A topic the name servers do not know is
    an error (nothing is deleted)."""
    if topic not in run(namesrv, lambda a: a.topic_list()):
        raise click.ClickException(
            f"topic {topic} does not exist (rocketq admin topicList shows them); nothing deleted"
        )
    brokers = run(namesrv, lambda a: a.delete_topic(topic, cluster=cluster))
    emit(as_json, {"topic": topic, "brokers": brokers}, ["deleted", "broker"], [[topic, b] for b in brokers])


@admin.command("pendingTransactions")
@namesrv_option
@click.option("-c", "--cluster", help="only the brokers of this cluster")
@json_option
def pending_transactions(namesrv: str, cluster: str | None, as_json: bool) -> None:
    """Half messages waiting for their transaction to end, per broker and producer group."""
    pending = run(namesrv, lambda a: a.pending_transactions(cluster))
    rows = [
        [
            broker,
            row.producer_group,
            row.half_messages,
            row.transaction_groups,
            row.runs,
            timestamp(row.oldest_store_timestamp),
            answer.committed_groups,
        ]
        for broker, answer in pending.items()
        for row in answer.groups
    ]
    names = ["broker", "producerGroup", "halfMessages", "transactionGroups", "runs", "oldest", "committedGroups"]
    documents = [dict(zip(names, row, strict=True)) for row in rows]
    emit(as_json, documents, names, rows)


@admin.command("sendMessage")
@namesrv_option
@click.option("-t", "--topic", required=True)
@click.option("-p", "--body", required=True)
@click.option("-c", "--tags")
@click.option("-k", "--keys")
@click.option("-b", "--broker-name", help="to a queue of this broker (with -i)")
@click.option("-i", "--queue-id", type=click.IntRange(min=0), help="to this queue (with -b)")
@click.option("-g", "--group", default="TOOLS_PRODUCER", show_default=True)
@json_option
def send_message(
    namesrv: str,
    topic: str,
    body: str,
    tags: str | None,
    keys: str | None,
    broker_name: str | None,
    queue_id: int | None,
    group: str,
    as_json: bool,
) -> None:
    """Send one message, to the queue the producer picks or to queue -i of broker -b."""
    if (broker_name is None) != (queue_id is None):
        raise click.UsageError("-b/--broker-name and -i/--queue-id go together")
    config = client_config(namesrv)

    def chosen(queues: Sequence[MessageQueue], _message: Message, _arg: object) -> MessageQueue:
        for queue in queues:
            if (queue.broker_name, queue.queue_id) == (broker_name, queue_id):
                return queue
        have = ", ".join(f"{q.broker_name}:{q.queue_id}" for q in queues)
        raise MQClientError(f"topic {topic} has no writable queue {queue_id} on broker {broker_name} (it has {have})")

    async def send() -> Any:
        async with Producer(ProducerConfig(group=group, client=config)) as producer:
            message = Message(topic, body.encode(), tags=tags, keys=keys)
            if broker_name is None:
                return await producer.send(message)
            return await producer.send_orderly(message, selector=chosen)

    try:
        result = asyncio.run(send())
    except (MQClientError, RocketqError) as exc:
        raise click.ClickException(str(exc)) from exc
    document = {
        "status": result.status.value,
        "msgId": result.msg_id,
        "offsetMsgId": result.offset_msg_id,
        "broker": result.message_queue.broker_name,
        "queueId": result.message_queue.queue_id,
        "queueOffset": result.queue_offset,
    }
    emit(as_json, document)


@admin.command("consumerProgress")
@namesrv_option
@click.option("-g", "--group", help="the group; without it, every group at a glance")
@click.option("-t", "--topic", help="only this topic (with --group)")
@json_option
def consumer_progress(namesrv: str, group: str | None, topic: str | None, as_json: bool) -> None:
    """Per queue: broker offset, consumer offset, lag and the last consumed message's time. Without a
    group: every group with its members online, its consume TPS and its total lag."""
    if group is None:
        if topic is not None:
            raise click.UsageError("--topic needs --group")
        _groups_overview(namesrv, as_json)
        return
    stats = run(namesrv, lambda a: a.consume_stats(group, topic))
    rows = stats.offset_table
    if not rows:  # a mistyped group would otherwise read as "no lag"
        where = f" on topic {topic!r}" if topic else ""
        raise click.ClickException(
            f"no consume progress for group {group!r}{where}: it has committed no offset, or does not exist"
        )
    documents: list[dict[str, Any]] = [
        {
            "topic": r.topic,
            "broker": r.broker_name,
            "queueId": r.queue_id,
            "brokerOffset": r.broker_offset,
            "consumerOffset": r.consumer_offset,
            "lag": max(0, r.broker_offset - r.consumer_offset),
            "lastTimestamp": timestamp(r.last_timestamp),
        }
        for r in rows
    ]
    table = [list(d.values()) for d in documents]
    emit(as_json, documents, ["topic", "broker", "queue", "brokerOffset", "consumerOffset", "lag", "lastTime"], table)
    if not as_json:
        click.echo(f"total lag: {sum(d['lag'] for d in documents)}, consume TPS: {stats.consume_tps:.2f}")


def _groups_overview(namesrv: str, as_json: bool) -> None:
    documents: list[dict[str, Any]] = [
        {
            "group": o.group,
            "members": o.members,
            "version": o.version,
            "consumeType": o.consume_type,
            "messageModel": o.message_model,
            "consumeTps": round(o.consume_tps, 2),
            "lag": o.lag,
        }
        for o in run(namesrv, lambda admin_client: admin_client.groups_overview())
    ]
    table = [["-" if value is None else value for value in d.values()] for d in documents]  # (offline: no kind)
    emit(as_json, documents, ["group", "members", "version", "type", "model", "tps", "lag"], table)


@admin.command("consumerConnection")
@namesrv_option
@click.option("-g", "--group", required=True)
@json_option
def consumer_connection(namesrv: str, group: str, as_json: bool) -> None:
    """The group's online members and what they subscribe to."""
    connection = run(namesrv, lambda a: a.consumer_connection(group))
    members = [
        {"clientId": c.client_id, "address": c.client_addr, "language": c.language, "version": c.version}
        for c in connection.connection_set
    ]
    subscriptions = {topic: s.sub_string for topic, s in connection.subscription_table.items()}
    if as_json:
        emit(
            True,
            {
                "members": members,
                "subscriptions": subscriptions,
                "messageModel": connection.message_model,
                "consumeType": connection.consume_type,
                "consumeFromWhere": connection.consume_from_where,
            },
        )
        return
    emit(False, members, ["clientId", "address", "language", "version"], [list(m.values()) for m in members])
    click.echo("")
    emit(False, subscriptions, ["topic", "expression"], sorted(subscriptions.items()))


@admin.command("resetOffsetByTime")
@namesrv_option
@click.option("-g", "--group", required=True)
@click.option("-t", "--topic", required=True)
@click.option(
    "-s",
    "--timestamp",
    "when",
    required=True,
    help="ms since the epoch, 'now', or an ISO time such as 2026-11-21T10:00:00",
)
@click.option(
    "-f",
    "--force/--no-force",
    default=True,
    show_default="--force",  # (True would show the short name's letter)
    help="--no-force only moves offsets back, never past what the group has consumed",
)
@json_option
def reset_offset_by_time(namesrv: str, group: str, topic: str, when: str, force: bool, as_json: bool) -> None:
    """Move a group's offsets of a topic to a point in time; running members continue from there."""
    offsets = run(namesrv, lambda a: a.reset_offset_by_time(group, topic, parse_time(when), force=force))
    documents = [{"broker": o.broker_name, "queueId": o.queue_id, "offset": o.offset} for o in offsets]
    emit(as_json, documents, ["broker", "queue", "offset"], [list(d.values()) for d in documents])


@admin.command("updateSubGroup")
@namesrv_option
@click.option("-g", "--group", required=True)
@click.option("-c", "--cluster", help="on every master of this cluster (default: all)")
@click.option("-b", "--broker-addr", help="on this broker only")
@click.option("--consume-enable/--consume-disable", default=True, show_default=True)
@click.option("--broadcast-enable/--broadcast-disable", default=True, show_default=True)
@click.option("-q", "--retry-queue-nums", default=1, show_default=True)
@click.option("-r", "--retry-max-times", default=16, show_default=True)
@json_option
def update_sub_group(
    namesrv: str,
    group: str,
    cluster: str | None,
    broker_addr: str | None,
    consume_enable: bool,
    broadcast_enable: bool,
    retry_queue_nums: int,
    retry_max_times: int,
    as_json: bool,
) -> None:
    """Create or change a consumer group's settings."""
    config = SubscriptionGroupConfigBody(
        group_name=group,
        consume_enable=consume_enable,
        consume_broadcast_enable=broadcast_enable,
        retry_queue_nums=retry_queue_nums,
        retry_max_times=retry_max_times,
    )
    brokers = run(namesrv, lambda a: a.update_subscription_group(config, cluster=cluster, broker_addr=broker_addr))
    emit(as_json, {"group": group, "brokers": brokers}, ["group", "broker"], [[group, b] for b in brokers])


for _command in (
    *MESSAGE_COMMANDS,
    *BROKER_COMMANDS,
    *CONSUMER_COMMANDS,
    *CLUSTER_COMMANDS,
    *TIMING_COMMANDS,
):  # the commands kept in modules of their own
    admin.add_command(_command)
