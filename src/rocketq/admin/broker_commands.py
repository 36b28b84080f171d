"""``rocketq admin`` broker commands: clusterList, brokerStatus, getBrokerConfig, updateBrokerConfig,
cleanExpiredCQ, haStatus, and the addresses ``-b``/``-c`` name."""

from __future__ import annotations

import time

import click
import msgspec

from rocketq.admin.options import json_option, namesrv_option, run
from rocketq.admin.render import emit
from rocketq.broker.runtime_stats import human_bytes
from rocketq.client.admin import AdminClient
from rocketq.client.admin_cluster import broker_config, clean_expired_consume_queues, ha_status, update_broker_config
from rocketq.client.route import MASTER_ID
from rocketq.common.errors import RocketqError
from rocketq.protocol.ha_status import HARuntimeInfo


async def broker_addresses(admin: AdminClient, broker_addr: str | None, cluster: str | None) -> list[str]:
    """``-b ADDR`` itself, or every broker (masters and slaves) of cluster ``-c``; UsageError with neither."""
    if broker_addr:
        return [broker_addr]
    if not cluster:
        raise click.UsageError("give a broker address (-b) or a cluster (-c)")
    info = await admin.cluster_info()
    names = info.cluster_addr_table.get(cluster)
    if not names:
        raise click.ClickException(f"cluster {cluster!r} is unknown to the name servers")
    return [
        address
        for name in sorted(names)
        if (data := info.broker_addr_table.get(name)) is not None
        for _, address in sorted(data.broker_addrs.items())
    ]


broker_addr_option = click.option("-b", "--broker-addr", help="the broker's address, host:port")
cluster_option = click.option("-c", "--cluster", help="every broker of this cluster")


def _first_rate(text: str | None) -> float | None:
    """The 10 s rate of a "10s 1m 10m" triple (what mqadmin's clusterList shows)."""
    try:
        return float((text or "").split()[0])
    except (IndexError, ValueError):
        return None


async def _runtime_or_none(admin: AdminClient, address: str) -> dict[str, str] | None:
    try:
        return await admin.broker_runtime_info(address)
    except RocketqError:
        return None  # a broker that does not answer still has its row, without statistics


@click.command("clusterList")
@namesrv_option
@json_option
def cluster_list(namesrv: str, as_json: bool) -> None:
    """Clusters and their brokers, with each broker's version, put and get TPS (last 10 s), page-cache
    lock wait, hours of messages kept and disk use (mqadmin's columns), its role and how far replication
    lags: a slave's bytes behind its master, a master's slaves in sync and the furthest one's lag."""

    async def rows(admin: AdminClient) -> list[dict[str, object]]:
        info = await admin.cluster_info()
        documents: list[dict[str, object]] = []
        for cluster, names in sorted(info.cluster_addr_table.items()):
            for name in sorted(names):
                data = info.broker_addr_table.get(name)
                master_end: int | None = None
                for broker_id, address in sorted((data.broker_addrs if data else {}).items()):
                    runtime = await _runtime_or_none(admin, address) or {}
                    earliest = int(runtime.get("earliestMessageTimeStamp", "-1") or -1)
                    now_ms = int(time.time() * 1000)
                    ratio = runtime.get("commitLogDiskRatio")
                    document: dict[str, object] = {
                        "cluster": cluster,
                        "broker": name,
                        "brokerId": broker_id,
                        "address": address,
                        "version": runtime.get("brokerVersionDesc"),
                        "inTps": _first_rate(runtime.get("putTps")),
                        "outTps": _first_rate(runtime.get("getTransferedTps")),
                        "pageCacheWaitMs": int(runtime.get("pageCacheLockTimeMills", "0")) if runtime else None,
                        "hours": round((now_ms - earliest) / 3_600_000, 2) if earliest > 0 else None,
                        "space": float(ratio) if ratio else None,
                    }
                    end = int(runtime["commitLogMaxOffset"]) if "commitLogMaxOffset" in runtime else None
                    if broker_id == MASTER_ID:
                        master_end = end
                    document.update(await _replication(admin, address, broker_id, runtime, end, master_end))
                    documents.append(document)
        return documents

    documents = run(namesrv, rows)
    headers = ["cluster", "broker", "BID", "address", "role", "version", "InTPS", "OutTPS", "PCWait(ms)", "hour"]
    headers += ["SPACE", "slaves", "behind"]
    table = [
        [
            d["cluster"],
            d["broker"],
            d["brokerId"],
            d["address"],
            d["role"],
            d["version"],
            _fixed(d["inTps"]),
            _fixed(d["outTps"]),
            d["pageCacheWaitMs"],
            _fixed(d["hours"]),
            _fixed(d["space"], 4),
            _in_sync(d.get("slaves")),
            "" if d["lagBytes"] is None else human_bytes(int(str(d["lagBytes"]))),
        ]
        for d in documents
    ]
    emit(as_json, documents, headers, table)


async def _replication(
    admin: AdminClient, address: str, broker_id: int, runtime: dict[str, str], end: int | None, master_end: int | None
) -> dict[str, object]:
    """clusterList's replication fields of one broker: ``role`` (brokerRole, or MASTER/SLAVE by id for
    a broker that does not say), ``commitLogMaxOffset``, ``lagBytes`` (a slave: its master's CommitLog
    end minus its own, as read one after the other; a master: its furthest slave's lag) and, for a
    master that answers GET_BROKER_HA_STATUS, ``slaves`` (each one's address, acknowledged offset,
    lag and whether it is in sync)."""
    role = runtime.get("brokerRole") or ("MASTER" if broker_id == MASTER_ID else "SLAVE")
    fields: dict[str, object] = {"role": role, "commitLogMaxOffset": end, "lagBytes": None}
    if broker_id != MASTER_ID:
        if end is not None and master_end is not None:
            fields["lagBytes"] = max(0, master_end - end)
        return fields
    try:
        status = await ha_status(admin, address)
    except RocketqError:
        return fields  # (a RocketMQ 4 broker has no such request)
    slaves = [
        {"addr": c.addr, "slaveAckOffset": c.slave_ack_offset, "diff": c.diff, "inSync": c.in_sync}
        for c in status.ha_connection_info
    ]
    fields["slaves"] = slaves
    if slaves:
        fields["lagBytes"] = max(c.diff for c in status.ha_connection_info)
    return fields


def _in_sync(slaves: object) -> str:
    """A master's "in sync / connected" slaves cell ("" for a slave, or a master that does not say)."""
    if not isinstance(slaves, list):
        return ""
    return f"{sum(1 for s in slaves if s['inSync'])}/{len(slaves)}"


def _fixed(value: object, digits: int = 2) -> str:
    return "" if not isinstance(value, (int, float)) else f"{value:.{digits}f}"


@click.command("brokerStatus")
@namesrv_option
@broker_addr_option
@cluster_option
@json_option
def broker_status(namesrv: str, broker_addr: str | None, cluster: str | None, as_json: bool) -> None:
    """A broker's runtime statistics (GET_BROKER_RUNTIME_INFO), by name, as RocketMQ's tools show them."""

    async def status(admin: AdminClient) -> dict[str, dict[str, str]]:
        return {
            address: await admin.broker_runtime_info(address)
            for address in await broker_addresses(admin, broker_addr, cluster)
        }

    tables = run(namesrv, status)
    if as_json:
        emit(True, tables if cluster else tables[broker_addr or ""])
        return
    if cluster:
        rows = [[address, key, value] for address, table in tables.items() for key, value in sorted(table.items())]
        emit(False, tables, ["broker", "key", "value"], rows)
    else:
        table = next(iter(tables.values()))
        emit(False, table, ["key", "value"], sorted(table.items()))


@click.command("getBrokerConfig")
@namesrv_option
@broker_addr_option
@cluster_option
@json_option
def get_broker_config(namesrv: str, broker_addr: str | None, cluster: str | None, as_json: bool) -> None:
    """A broker's settings under their broker.conf keys (every broker of a cluster with -c)."""

    async def configs(admin: AdminClient) -> dict[str, dict[str, str]]:
        return {a: await broker_config(admin, a) for a in await broker_addresses(admin, broker_addr, cluster)}

    tables = run(namesrv, configs)
    if as_json:
        emit(True, tables if cluster else tables[broker_addr or ""])
        return
    rows = [[address, key, value] for address, table in tables.items() for key, value in table.items()]
    emit(False, tables, ["broker", "key", "value"], rows)


@click.command("updateBrokerConfig")
@namesrv_option
@broker_addr_option
@cluster_option
@click.option("-k", "--key", required=True, help="a broker.conf key, such as maxMessageSize")
@click.option("-v", "--value", required=True)
@json_option
def update_broker_config_command(
    namesrv: str, broker_addr: str | None, cluster: str | None, key: str, value: str, as_json: bool
) -> None:
    """Change a broker setting while the broker runs (and in its broker.conf, when it was started from
    one). Settings the broker cannot change while running are refused, naming those it can."""

    async def update(admin: AdminClient) -> list[str]:
        addresses = await broker_addresses(admin, broker_addr, cluster)
        for address in addresses:
            await update_broker_config(admin, address, key, value)
        return addresses

    brokers = run(namesrv, update)
    emit(
        as_json,
        {"key": key, "value": value, "brokers": brokers},
        ["broker", "key", "value"],
        [[b, key, value] for b in brokers],
    )


@click.command("cleanExpiredCQ")
@namesrv_option
@broker_addr_option
@click.option("-c", "--cluster", help="every broker of this cluster (default: every broker)")
@json_option
def clean_expired_cq(namesrv: str, broker_addr: str | None, cluster: str | None, as_json: bool) -> None:
    """Delete ConsumeQueue files that only point at CommitLog data no longer kept (after CommitLog files
    were removed by hand, say); retention deletes the others as it goes."""

    async def clean(admin: AdminClient) -> dict[str, int]:
        if broker_addr or cluster:
            addresses = await broker_addresses(admin, broker_addr, cluster)
        else:
            info = await admin.cluster_info()
            addresses = [a for data in info.broker_addr_table.values() for _, a in sorted(data.broker_addrs.items())]
        return {address: await clean_expired_consume_queues(admin, address) for address in sorted(addresses)}

    deleted = run(namesrv, clean)
    documents = [{"broker": address, "deletedFiles": n} for address, n in deleted.items()]
    emit(as_json, documents, ["broker", "deletedFiles"], [list(d.values()) for d in documents])


@click.command("haStatus")
@namesrv_option
@broker_addr_option
@cluster_option
@json_option
def ha_status_command(namesrv: str, broker_addr: str | None, cluster: str | None, as_json: bool) -> None:
    """Replication as each broker sees it (GET_BROKER_HA_STATUS, RocketMQ 5's haStatus): a master's
    connected slaves with their acknowledged offsets and bytes behind; a slave's master and log end."""

    async def statuses(admin: AdminClient) -> dict[str, HARuntimeInfo]:
        return {a: await ha_status(admin, a) for a in await broker_addresses(admin, broker_addr, cluster)}

    found = run(namesrv, statuses)
    documents = {address: msgspec.to_builtins(info) for address, info in found.items()}
    headers = ["broker", "role", "commitLogMaxOffset", "peer", "ackOffset", "behind", "inSync", "B/s"]
    rows: list[list[object]] = []
    for address, info in found.items():
        if info.master:
            rows.append([address, "master", info.master_commit_log_max_offset, "", "", "", "", ""])
            for c in info.ha_connection_info:
                rows.append(["", "", "", c.addr, c.slave_ack_offset, c.diff, c.in_sync, c.transferred_byte_in_second])
        else:
            client = info.ha_client_runtime_info
            peer = client.master_addr + ("" if client.is_activated else " (not connected)")
            rows.append([address, "slave", client.max_offset, peer, "", "", "", client.transferred_byte_in_second])
    emit(as_json, documents if cluster else documents[broker_addr or ""], headers, rows)


BROKER_COMMANDS = (
    cluster_list,
    broker_status,
    get_broker_config,
    update_broker_config_command,
    clean_expired_cq,
    ha_status_command,
)
