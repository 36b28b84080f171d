"""Admin operations on the cluster and its brokers: which clusters serve a topic, brokers' write
permission on the NameServers (WIPE_WRITE_PERM_OF_BROKER 205, ADD_WRITE_PERM_OF_BROKER 327), deleting a
consumer group (DELETE_SUBSCRIPTIONGROUP 207), a group's producers (GET_PRODUCER_CONNECTION_LIST 204),
a broker's settings (GET_BROKER_CONFIG 26, UPDATE_BROKER_CONFIG 25) and its replication
(GET_BROKER_HA_STATUS 907)."""

from __future__ import annotations

from rocketq.client.admin import AdminClient
from rocketq.client.errors import MQClientError, ValidationError
from rocketq.client.route import MASTER_ID
from rocketq.common.group_topics import dlq_topic, retry_topic
from rocketq.protocol import RequestCode, ResponseCode
from rocketq.protocol.bodies import ClientConnection
from rocketq.protocol.broker_stats import GetProducerConnectionListRequestHeader, ProducerConnection
from rocketq.protocol.ha_status import HARuntimeInfo
from rocketq.protocol.headers import DeleteSubscriptionGroupRequestHeader
from rocketq.protocol.namesrv_headers import AddWritePermOfBrokerRequestHeader, WipeWritePermOfBrokerRequestHeader


async def topic_clusters(admin: AdminClient, topic: str) -> list[str]:
    """The clusters whose brokers serve ``topic``."""
    route = await admin.topic_route(topic)
    info = await admin.cluster_info()
    names = {broker.broker_name for broker in route.broker_datas}
    return sorted(cluster for cluster, brokers in info.cluster_addr_table.items() if names & set(brokers))


async def change_write_perm(admin: AdminClient, broker_name: str, *, allow: bool) -> dict[str, int]:
    """Take away (``allow`` False) or give back the write permission of broker ``broker_name``'s topics
    on every NameServer; the number of topics changed, by NameServer. Producers stop choosing its
    queues once their routes refresh; its next registration (every 30 s) sets its own permissions again."""
    if allow:
        code, fields = (
            RequestCode.ADD_WRITE_PERM_OF_BROKER,
            AddWritePermOfBrokerRequestHeader(broker_name=broker_name).to_ext_fields(),
        )
        count_field = "addTopicCount"
    else:
        code, fields = (
            RequestCode.WIPE_WRITE_PERM_OF_BROKER,
            WipeWritePermOfBrokerRequestHeader(broker_name=broker_name).to_ext_fields(),
        )
        count_field = "wipeTopicCount"
    counts = {}
    for address in admin.name_servers:
        response = await admin.request_namesrv_at(address, code, fields)
        counts[address] = int(response.ext_fields.get(count_field, "0"))
    return counts


async def delete_subscription_group(
    admin: AdminClient,
    group: str,
    *,
    cluster: str | None = None,
    broker_addr: str | None = None,
    remove_offset: bool = False,
) -> list[str]:
    """Delete consumer group ``group``'s settings (and with ``remove_offset`` its committed offsets) on
    one broker, or on every master of ``cluster`` (all clusters by default), where its retry and
    dead-letter topics go too; returns the brokers."""
    targets = [broker_addr] if broker_addr else list((await admin.master_addresses(cluster)).values())
    if not targets:
        raise MQClientError("no broker to delete the group on")
    fields = DeleteSubscriptionGroupRequestHeader(group_name=group, remove_offset=remove_offset).to_ext_fields()
    for address in targets:
        await admin.request_broker(address, RequestCode.DELETE_SUBSCRIPTIONGROUP, fields)
    if broker_addr is None:
        known = set(await admin.topic_list())
        for topic in (retry_topic(group), dlq_topic(group)):
            if topic in known:
                await admin.delete_topic(topic, cluster=cluster)
    return targets


async def broker_config(admin: AdminClient, address: str) -> dict[str, str]:
    """The settings of the broker at ``address`` under their broker.conf keys (GET_BROKER_CONFIG)."""
    response = await admin.request_broker(address, RequestCode.GET_BROKER_CONFIG)
    table: dict[str, str] = {}
    for line in bytes(response.body).decode("utf-8").splitlines():
        key, separator, value = line.partition("=")
        if separator and key.strip() and not key.lstrip().startswith(("#", "!")):
            table[key.strip()] = value.strip()
    return table


async def update_broker_config(admin: AdminClient, address: str, key: str, value: str) -> None:
    """Set broker.conf key ``key`` to ``value`` on the broker at ``address`` while it runs
    (UPDATE_BROKER_CONFIG); BrokerResponseError with the broker's reason when it refuses."""
    if "\n" in key or "\n" in value or "=" in key:
        raise ValidationError("a key has no '=' and neither key nor value a line break")
    await admin.request_broker(address, RequestCode.UPDATE_BROKER_CONFIG, body=f"{key}={value}\n".encode())


async def producer_connections(admin: AdminClient, group: str, topic: str) -> list[ClientConnection]:
    """The producers of ``group`` connected to the masters of ``topic`` (GET_PRODUCER_CONNECTION_LIST),
    each client once; MQClientError when none is."""
    route = await admin.topic_route(topic)
    fields = GetProducerConnectionListRequestHeader(producer_group=group).to_ext_fields()
    found: dict[str, ClientConnection] = {}
    for broker in route.broker_datas:
        address = broker.broker_addrs.get(MASTER_ID)
        if address is None:
            continue
        response = await admin.request_broker(
            address, RequestCode.GET_PRODUCER_CONNECTION_LIST, fields, ok=(0, ResponseCode.SYSTEM_ERROR)
        )
        if response.code == ResponseCode.SUCCESS:
            for connection in ProducerConnection.decode(response.body).connection_set:
                found.setdefault(connection.client_id, connection)
    if not found:
        raise MQClientError(f"producer group {group!r} has no producer connected to the brokers of topic {topic}")
    return sorted(found.values(), key=lambda c: c.client_id)


async def clean_expired_consume_queues(admin: AdminClient, address: str) -> int:
    """Have the broker at ``address`` delete its ConsumeQueue files that only point below its CommitLog
    (CLEAN_EXPIRED_CONSUMEQUEUE); how many it deleted (-1: a broker that does not say, RocketMQ's)."""
    response = await admin.request_broker(address, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)
    return int(response.ext_fields.get("deletedFiles", "-1"))


async def ha_status(admin: AdminClient, address: str) -> HARuntimeInfo:
    """The replication of the broker at ``address`` (GET_BROKER_HA_STATUS): a master's slaves with their
    acknowledged offsets and how far behind they are, or a slave's master and CommitLog end."""
    response = await admin.request_broker(address, RequestCode.GET_BROKER_HA_STATUS)
    return HARuntimeInfo.decode(response.body)
