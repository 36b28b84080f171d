"""``rocketq admin`` commands on the cluster's layout and its clients: topicClusterList, wipeWritePerm,
addWritePerm, deleteSubGroup, producerConnection."""

from __future__ import annotations

import click

from rocketq.admin.options import json_option, namesrv_option, run
from rocketq.admin.render import emit
from rocketq.client.admin_cluster import (
    change_write_perm,
    delete_subscription_group,
    producer_connections,
    topic_clusters,
)
from rocketq.client.admin_stats import stats_all


@click.command("topicClusterList")
@namesrv_option
@click.option("-t", "--topic", required=True)
@json_option
def topic_cluster_list(namesrv: str, topic: str, as_json: bool) -> None:
    """The clusters whose brokers serve a topic."""
    clusters = run(namesrv, lambda a: topic_clusters(a, topic))
    emit(as_json, clusters, ["cluster"], [[c] for c in clusters])


def _write_perm_command(name: str, allow: bool, summary: str) -> click.Command:
    @click.command(name, help=summary)
    @namesrv_option
    @click.option("-b", "--broker-name", required=True, help="the broker's name (clusterList shows them)")
    @json_option
    def command(namesrv: str, broker_name: str, as_json: bool) -> None:
        counts = run(namesrv, lambda a: change_write_perm(a, broker_name, allow=allow))
        documents = [{"namesrv": address, "broker": broker_name, "topics": n} for address, n in counts.items()]
        emit(as_json, documents, ["namesrv", "broker", "topics"], [list(d.values()) for d in documents])

    return command


wipe_write_perm = _write_perm_command(
    "wipeWritePerm",
    False,
    "Take a broker's write permission away on every NameServer: producers stop sending to it (to drain it"
    " before maintenance) while consumers go on reading it. Its next registration restores its own permissions.",
)
add_write_perm = _write_perm_command(
    "addWritePerm", True, "Give a broker's topics read and write permission again on every NameServer."
)


def _parse_bool(_context: click.Context, _parameter: click.Parameter, value: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise click.BadParameter("true or false")
    return value.lower() == "true"


@click.command("deleteSubGroup")
@namesrv_option
@click.option("-g", "--group", required=True)
@click.option("-c", "--cluster", help="on every master of this cluster (default: all), with its retry and DLQ topics")
@click.option("-b", "--broker-addr", help="on this broker only")
@click.option(
    "-r", "--remove-offset", default="false", show_default=True, callback=_parse_bool, help="also its committed offsets"
)
@json_option
def delete_sub_group(
    namesrv: str, group: str, cluster: str | None, broker_addr: str | None, remove_offset: bool, as_json: bool
) -> None:
    """Delete a consumer group's settings from the brokers."""
    brokers = run(
        namesrv,
        lambda a: delete_subscription_group(
            a, group, cluster=cluster, broker_addr=broker_addr, remove_offset=remove_offset
        ),
    )
    emit(as_json, {"group": group, "brokers": brokers}, ["deleted", "broker"], [[group, b] for b in brokers])


@click.command("producerConnection")
@namesrv_option
@click.option("-g", "--group", required=True, help="the producer group")
@click.option("-t", "--topic", required=True, help="a topic it sends to (its brokers are asked)")
@json_option
def producer_connection(namesrv: str, group: str, topic: str, as_json: bool) -> None:
    """A producer group's clients connected to the brokers of a topic."""
    connections = run(namesrv, lambda a: producer_connections(a, group, topic))
    documents = [
        {"clientId": c.client_id, "clientAddr": c.client_addr, "language": c.language, "version": c.version}
        for c in connections
    ]
    rows = [[index, *d.values()] for index, d in enumerate(documents, 1)]
    emit(as_json, documents, ["#", "clientId", "clientAddr", "language", "version"], rows)


@click.command("statsAll")
@namesrv_option
@click.option("-t", "--topic", help="only this topic")
@click.option("-a", "--active-topic", is_flag=True, help="only topics with messages in or out in the last 24 hours")
@json_option
def stats_all_command(namesrv: str, topic: str | None, active_topic: bool, as_json: bool) -> None:
    """Per topic and consumer group: the backlog, messages in and out a second (last minute) and in the
    last 24 hours."""
    rows = [
        row
        for row in run(namesrv, lambda a: stats_all(a, topic))
        if not active_topic or row.in_today > 0 or row.out_today > 0
    ]
    documents = [
        {
            "topic": r.topic,
            "consumerGroup": r.group,
            "accumulation": r.accumulation,
            "inTps": round(r.in_tps, 2),
            "outTps": round(r.out_tps, 2),
            "inMsg24Hour": r.in_today,
            "outMsg24Hour": r.out_today,
        }
        for r in rows
    ]
    headers = ["#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour"]
    table = [
        [
            d["topic"],
            d["consumerGroup"] or "",
            d["accumulation"],
            f"{d['inTps']:.2f}",
            f"{d['outTps']:.2f}",
            d["inMsg24Hour"],
            d["outMsg24Hour"],
        ]
        for d in documents
    ]
    emit(as_json, documents, headers, table)


CLUSTER_COMMANDS = (
    topic_cluster_list,
    wipe_write_perm,
    add_write_perm,
    delete_sub_group,
    producer_connection,
    stats_all_command,
)
