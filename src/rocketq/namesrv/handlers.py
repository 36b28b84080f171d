"""The NameServer's request handlers: request code -> handler (RocketMQ's ``DefaultRequestProcessor``).

Each handler parses its typed header, asks the :class:`RouteTable` or the :class:`KVConfigTable`,
and builds the response; none of them awaits anything, so each request is handled atomically on
the event loop. A header or body the peer got wrong becomes a SYSTEM_ERROR reply naming the
problem; anything else that raises is left to :class:`RemotingServer` (SYSTEM_ERROR, logged).

Route bodies are written as standard JSON (quoted ``"0"`` broker-id keys) to every client: the
C++ client and ali-ons were seen accepting it and Java's fastjson parses both dialects
(docs/protocol.md#get_routeinfo_by_topic-105, #rule-11-routes-are-standard-json), whatever
``version`` or ``acceptStandardJsonOnly`` the request carries. Like fastjson, we sort the keys and
leave out a null ``orderTopicConf``, so the body has the shape the clients were observed parsing.
"""

from __future__ import annotations

import itertools
import logging
import time
import zlib
from collections.abc import Callable, Mapping
from typing import Final

import msgspec

from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.kv_config import ORDER_TOPIC_CONFIG, KVConfigTable
from rocketq.namesrv.route_table import (
    TOPIC_SYS_FLAG_UNIT,
    TOPIC_SYS_FLAG_UNIT_SUB,
    RemovedBroker,
    RouteTable,
)
from rocketq.protocol import (
    DataVersion,
    GetRouteInfoRequestHeader,
    KVTable,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerBody,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    RemoteProtocolError,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicList,
    TopicRouteData,
    UnregisterBrokerRequestHeader,
    make_response,
)
from rocketq.protocol.namesrv_headers import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from rocketq.remoting import Connection, RequestHandler

log = logging.getLogger(__name__)

_SyncHandler = Callable[[RemotingCommand, Connection], RemotingCommand]

_CONNECTION_ID: Final = "rocketq.namesrv.connection_id"
_SORTED_JSON: Final = msgspec.json.Encoder(order="sorted")


def encode_route(route: TopicRouteData) -> bytes:
    """Encode a route body as standard JSON with sorted keys and no null ``orderTopicConf``."""
    document = msgspec.to_builtins(route, str_keys=True)
    if route.order_topic_conf is None:
        del document["orderTopicConf"]
    return _SORTED_JSON.encode(document)


def body_crc32(body: bytes) -> int:
    """The checksum REGISTER_BROKER's ``bodyCrc32`` carries (Java's ``UtilAll.crc32``)."""
    return zlib.crc32(body) & 0x7FFFFFFF


class NamesrvProcessor:
    """Handles NameServer requests against one route table and one KV table.

    It also remembers which connection each broker registered on, so that the server can drop
    the broker when that connection closes and close the connection of an expired broker.
    Use from the NameServer's event loop only.
    """

    def __init__(
        self,
        route_table: RouteTable,
        kv_config: KVConfigTable,
        config: NamesrvConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.route_table = route_table
        self.kv_config = kv_config
        self.config = config
        self._clock = clock
        self._ids = itertools.count(1)
        self._connections: dict[int, Connection] = {}

    def handlers(self) -> dict[int, RequestHandler]:
        """The handler table to give a :class:`RemotingServer`."""
        table: Mapping[RequestCode, _SyncHandler] = {
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.QUERY_DATA_VERSION: self.query_data_version,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.get_route_info_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm_of_broker,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.get_all_topic_list,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic_in_namesrv,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.get_system_topic_list,
            RequestCode.GET_UNIT_TOPIC_LIST: self.get_unit_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self.get_has_unit_sub_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self.get_has_unit_sub_ununit_topic_list,
        }
        return {int(code): _guarded(handler) for code, handler in table.items()}

    # -- connections ----------------------------------------------------------------------------

    def _connection_id(self, connection: Connection) -> int:
        existing = connection.attributes.get(_CONNECTION_ID)
        if isinstance(existing, int):
            return existing
        connection_id = next(self._ids)
        connection.attributes[_CONNECTION_ID] = connection_id
        self._connections[connection_id] = connection
        return connection_id

    def connection_closed(self, connection: Connection) -> list[RemovedBroker]:
        """Drop the brokers that registered on ``connection``; returns them."""
        connection_id = connection.attributes.get(_CONNECTION_ID)
        if not isinstance(connection_id, int):
            return []
        self._connections.pop(connection_id, None)
        return self.route_table.remove_by_connection(connection_id)

    def connection_of(self, connection_id: int | None) -> Connection | None:
        """The open connection a broker registered on, if it is still known."""
        return self._connections.get(connection_id) if connection_id is not None else None

    # -- KV config ------------------------------------------------------------------------------

    def put_kv_config(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        header = PutKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        self.kv_config.put(header.namespace, header.key, header.value)
        return make_response(request, ResponseCode.SUCCESS)

    def get_kv_config(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        header = GetKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        value = self.kv_config.get(header.namespace, header.key)
        if value is None:
            remark = f"No config item, Namespace: {header.namespace} Key: {header.key}"
            return make_response(request, ResponseCode.QUERY_NOT_FOUND, remark)
        fields = GetKVConfigResponseHeader(value=value).to_ext_fields()
        return make_response(request, ResponseCode.SUCCESS, ext_fields=fields)

    def delete_kv_config(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        header = DeleteKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        self.kv_config.delete(header.namespace, header.key)
        return make_response(request, ResponseCode.SUCCESS)

    def get_kv_list_by_namespace(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        header = GetKVListByNamespaceRequestHeader.from_ext_fields(request.ext_fields)
        table = self.kv_config.namespace(header.namespace)
        if table is None:
            remark = f"No config item, Namespace: {header.namespace}"
            return make_response(request, ResponseCode.QUERY_NOT_FOUND, remark)
        return make_response(request, ResponseCode.SUCCESS, body=KVTable(table=table).encode())

    # -- brokers --------------------------------------------------------------------------------

    def register_broker(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        header = RegisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        body = bytes(request.body)
        if header.body_crc32 != 0 and body_crc32(body) != header.body_crc32:
            log.warning(
                "REGISTER_BROKER from %s (%s): body crc32 %d does not match header %d",
                header.broker_name,
                header.broker_addr,
                body_crc32(body),
                header.body_crc32,
            )
            return make_response(request, ResponseCode.SYSTEM_ERROR, "crc32 not match")
        if not body:
            registration = RegisterBrokerBody()
        elif header.compressed:
            registration = RegisterBrokerBody.decode_compressed(body)
        else:
            registration = RegisterBrokerBody.decode(body)
        result = self.route_table.register_broker(
            cluster=header.cluster_name,
            broker_addr=header.broker_addr,
            broker_name=header.broker_name,
            broker_id=header.broker_id,
            ha_server_addr=header.ha_server_addr,
            topic_config_wrapper=registration.topic_config_serialize_wrapper,
            filter_servers=registration.filter_server_list,
            now=self._clock(),
            connection_id=self._connection_id(connection),
        )
        log.debug(
            "REGISTER_BROKER %s (%s) id=%d cluster=%s topics=%d",
            header.broker_name,
            header.broker_addr,
            header.broker_id,
            header.cluster_name,
            len(registration.topic_config_serialize_wrapper.topic_config_table),
        )
        fields = RegisterBrokerResponseHeader(
            ha_server_addr=result.ha_server_addr, master_addr=result.master_addr
        ).to_ext_fields()
        order_topics = self.kv_config.namespace(ORDER_TOPIC_CONFIG)
        reply_body = KVTable(table=order_topics).encode() if order_topics is not None else b""
        return make_response(request, ResponseCode.SUCCESS, ext_fields=fields, body=reply_body)

    def unregister_broker(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        header = UnregisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        self.route_table.unregister_broker(
            cluster=header.cluster_name,
            broker_addr=header.broker_addr,
            broker_name=header.broker_name,
            broker_id=header.broker_id,
        )
        return make_response(request, ResponseCode.SUCCESS)

    def query_data_version(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        header = QueryDataVersionRequestHeader.from_ext_fields(request.ext_fields)
        if not request.body:
            raise RemoteProtocolError("QUERY_DATA_VERSION carries no DataVersion body")
        version = DataVersion.decode(request.body)
        changed = self.route_table.is_topic_config_changed(header.broker_addr, version)
        if not changed:
            self.route_table.touch(header.broker_addr, self._clock())
        ours = self.route_table.data_version(header.broker_addr)
        fields = QueryDataVersionResponseHeader(changed=changed).to_ext_fields()
        body = ours.encode() if ours is not None else b""
        return make_response(request, ResponseCode.SUCCESS, ext_fields=fields, body=body)

    def get_broker_cluster_info(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        return make_response(request, ResponseCode.SUCCESS, body=self.route_table.cluster_info().encode())

    def wipe_write_perm_of_broker(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        header = WipeWritePermOfBrokerRequestHeader.from_ext_fields(request.ext_fields)
        count = self.route_table.wipe_write_perm(header.broker_name)
        log.info("write permission of broker %s wiped on %d topics", header.broker_name, count)
        fields = WipeWritePermOfBrokerResponseHeader(wipe_topic_count=count).to_ext_fields()
        return make_response(request, ResponseCode.SUCCESS, ext_fields=fields)

    def add_write_perm_of_broker(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        header = AddWritePermOfBrokerRequestHeader.from_ext_fields(request.ext_fields)
        count = self.route_table.add_write_perm(header.broker_name)
        log.info("write permission of broker %s restored on %d topics", header.broker_name, count)
        fields = AddWritePermOfBrokerResponseHeader(add_topic_count=count).to_ext_fields()
        return make_response(request, ResponseCode.SUCCESS, ext_fields=fields)

    # -- topics ---------------------------------------------------------------------------------

    def get_route_info_by_topic(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        header = GetRouteInfoRequestHeader.from_ext_fields(request.ext_fields)
        route = self.route_table.pick_topic_route(header.topic)
        if route is None:
            remark = f"No topic route info in name server for the topic: {header.topic}"
            return make_response(request, ResponseCode.TOPIC_NOT_EXIST, remark)
        if self.config.order_message_enable:
            order_conf = self.kv_config.get(ORDER_TOPIC_CONFIG, header.topic)
            route = msgspec.structs.replace(route, order_topic_conf=order_conf)
        return make_response(request, ResponseCode.SUCCESS, body=encode_route(route))

    def get_all_topic_list(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        return _topic_list(request, self.route_table.all_topics())

    def delete_topic_in_namesrv(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        header = DeleteTopicFromNamesrvRequestHeader.from_ext_fields(request.ext_fields)
        self.route_table.delete_topic(header.topic, header.cluster_name)
        return make_response(request, ResponseCode.SUCCESS)

    def get_topics_by_cluster(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        header = GetTopicsByClusterRequestHeader.from_ext_fields(request.ext_fields)
        return _topic_list(request, self.route_table.topics_by_cluster(header.cluster))

    def get_system_topic_list(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        return make_response(request, ResponseCode.SUCCESS, body=self.route_table.system_topics().encode())

    def get_unit_topic_list(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        return _topic_list(
            request, self.route_table.topics_with_sys_flag(lambda flag: bool(flag & TOPIC_SYS_FLAG_UNIT))
        )

    def get_has_unit_sub_topic_list(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        topics = self.route_table.topics_with_sys_flag(lambda flag: bool(flag & TOPIC_SYS_FLAG_UNIT_SUB))
        return _topic_list(request, topics)

    def get_has_unit_sub_ununit_topic_list(self, request: RemotingCommand, connection: Connection) -> RemotingCommand:
        topics = self.route_table.topics_with_sys_flag(
            lambda flag: not flag & TOPIC_SYS_FLAG_UNIT and bool(flag & TOPIC_SYS_FLAG_UNIT_SUB)
        )
        return _topic_list(request, topics)


def _topic_list(request: RemotingCommand, topics: list[str]) -> RemotingCommand:
    return make_response(request, ResponseCode.SUCCESS, body=TopicList(topic_list=topics).encode())


def _guarded(handler: _SyncHandler) -> RequestHandler:
    """Wrap a synchronous handler as a coroutine that answers bad requests with SYSTEM_ERROR."""

    async def handle(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        try:
            return handler(request, connection)
        except RemoteProtocolError as exc:
            log.warning(
                "bad request code=%d opaque=%d from %s: %s",
                request.code,
                request.opaque,
                connection.remote_address,
                exc,
            )
            return make_response(request, ResponseCode.SYSTEM_ERROR, str(exc))

    return handle
