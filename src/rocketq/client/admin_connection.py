"""What every AdminClient operation goes through: requests to the NameServers and brokers, and the
cluster's tables and routes (which brokers, which masters)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Self

from rocketq.client.config import ClientConfig
from rocketq.client.errors import MQClientError, RouteNotFoundError, broker_error
from rocketq.client.instance import ClientInstance
from rocketq.client.route import MASTER_ID
from rocketq.protocol import (
    ClusterInfo,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicList,
    TopicRouteData,
    make_request,
)
from rocketq.remoting import RemotingError
from rocketq.remoting.connection import next_opaque


class AdminConnection:
    """The connections of an :class:`~rocketq.client.admin.AdminClient` (its base class): requests to
    NameServers and brokers, and the cluster and topic routes the operations find their brokers by."""

    def __init__(
        self,
        namesrv_addr: str,
        *,
        timeout_s: float = 5.0,
        query_route_ttl_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        access_key: str = "",
        secret_key: str = "",
    ) -> None:
        """``query_route_ttl_s``: how long the message queries reuse a topic's route before asking the
        name servers again (the other operations always ask); ``clock`` measures it (seconds)."""
        config = ClientConfig(
            namesrv_addr=namesrv_addr, instance_name="admin", access_key=access_key, secret_key=secret_key
        )
        self._instance = ClientInstance(config)
        self._timeout = timeout_s
        self._query_route_ttl_s = query_route_ttl_s
        self._clock = clock
        self._query_routes: dict[str, tuple[float, TopicRouteData]] = {}

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Disconnect from the NameServers and brokers."""
        await self._instance.aclose()

    async def _namesrv(self, code: int, fields: dict[str, str] | None = None) -> RemotingCommand:
        response = await self._instance.invoke_namesrv(
            make_request(code, opaque=next_opaque(), ext_fields=fields or {}), self._timeout
        )
        if response.code != ResponseCode.SUCCESS:
            raise broker_error(response.code, response.remark, "name server")
        return response

    async def _broker(
        self, address: str, code: int, fields: dict[str, str], *, ok: tuple[int, ...] = (0,)
    ) -> RemotingCommand:
        return await self.request_broker(address, code, fields, ok=ok)

    async def request_broker(
        self,
        address: str,
        code: int,
        fields: dict[str, str] | None = None,
        *,
        body: bytes = b"",
        ok: tuple[int, ...] = (0,),
    ) -> RemotingCommand:
        """Send request ``code`` to the broker at ``address``; BrokerResponseError unless it answers
        with one of the codes in ``ok``."""
        response = await self._instance.invoke_broker(
            address, make_request(code, opaque=next_opaque(), ext_fields=fields or {}, body=body), self._timeout
        )
        if response.code not in ok:
            raise broker_error(response.code, response.remark, address)
        return response

    async def request_namesrv(self, code: int, fields: dict[str, str] | None = None) -> RemotingCommand:
        """Send request ``code`` to a NameServer; BrokerResponseError unless it succeeds."""
        return await self._namesrv(code, fields)

    @property
    def name_servers(self) -> list[str]:
        """The NameServer addresses this client was given."""
        return list(self._instance.config.name_servers)

    async def request_namesrv_at(self, address: str, code: int, fields: dict[str, str]) -> RemotingCommand:
        """Send request ``code`` to the NameServer at ``address`` (not another); BrokerResponseError
        unless it succeeds."""
        request = make_request(code, opaque=next_opaque(), ext_fields=fields)
        response = await self._instance.remoting.invoke(address, request, self._timeout)
        if response.code != ResponseCode.SUCCESS:
            raise broker_error(response.code, response.remark, f"name server {address}")
        return response

    # -- cluster and routes ---------------------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo:
        """The NameServers' cluster table: clusters, their brokers and the brokers' addresses."""
        return ClusterInfo.decode((await self._namesrv(RequestCode.GET_BROKER_CLUSTER_INFO)).body)

    async def topic_list(self) -> list[str]:
        """Every topic the NameServers know, sorted."""
        return sorted(
            TopicList.decode((await self._namesrv(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)).body).topic_list
        )

    async def topic_route(self, topic: str) -> TopicRouteData:
        """The route of ``topic``: its queues per broker and the brokers' addresses."""
        route = await self._instance.fetch_route(topic)
        if route is None:
            raise RouteNotFoundError(f"no route for topic {topic!r}: the name servers do not know it")
        return route

    async def _query_masters(self, topic: str) -> dict[str, str]:
        """broker name -> master address of ``topic``'s brokers, from a route at most
        ``query_route_ttl_s`` old: queries one after another do not each wait for a name server."""
        now = self._clock()
        cached = self._query_routes.get(topic)
        if cached is None or now - cached[0] >= self._query_route_ttl_s:
            cached = (now, await self.topic_route(topic))
            self._query_routes[topic] = cached
        return {b.broker_name: b.broker_addrs[MASTER_ID] for b in cached[1].broker_datas if MASTER_ID in b.broker_addrs}

    async def _query_broker(self, topic: str, address: str, code: int, fields: dict[str, Any]) -> RemotingCommand:
        """A query to one of ``topic``'s brokers; a broker that cannot be reached makes the next query
        look the route up again."""
        try:
            return await self._broker(address, code, fields, ok=(0, ResponseCode.QUERY_NOT_FOUND))
        except RemotingError:
            self._query_routes.pop(topic, None)
            raise

    async def master_addresses(self, cluster: str | None = None) -> dict[str, str]:
        """broker name -> master address, for one cluster or all."""
        info = await self.cluster_info()
        names = set(info.cluster_addr_table.get(cluster, [])) if cluster else set(info.broker_addr_table)
        if cluster and not names:
            raise MQClientError(f"cluster {cluster!r} is unknown to the name servers")
        return {
            name: data.broker_addrs[MASTER_ID]
            for name, data in info.broker_addr_table.items()
            if name in names and MASTER_ID in data.broker_addrs
        }
