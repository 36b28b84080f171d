"""ClientInstance (Java's MQClientInstance): the NameServer conversation, route cache, broker addresses,
heartbeats. Producers and consumers each own one; those of one process with equal configurations share
its connections and client id (``rocketq.client.client_links``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar, overload

from rocketq.client.client_links import ClientLink, loop_links, new_client_id
from rocketq.client.config import ClientConfig
from rocketq.client.errors import MQClientError, MQConnectionError, RouteNotFoundError, ValidationError, broker_error
from rocketq.client.route import MASTER_ID
from rocketq.protocol import (
    ClusterInfo,
    HeartbeatData,
    ProducerData,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicRouteData,
    make_request,
)
from rocketq.protocol.bodies import ConsumerData
from rocketq.protocol.headers import GetRouteInfoRequestHeader, UnregisterClientRequestHeader
from rocketq.remoting import RemotingClient, RemotingError, RequestHandler
from rocketq.remoting.address import local_ipv4
from rocketq.remoting.client import RequestSigner
from rocketq.remoting.connection import next_opaque
from rocketq.remoting.tasks import cancel_and_wait

log = logging.getLogger(__name__)

T = TypeVar("T")


class ClientInstance:
    def __init__(
        self,
        config: ClientConfig,
        *,
        handlers: dict[int, RequestHandler] | None = None,
        consumer_group: str | None = None,
    ) -> None:
        """``handlers`` answer the requests brokers send this client's group (``consumer_group``, or the
        producer groups added to ``producer_groups`` before ``start``)."""
        if not config.name_servers:
            raise ValidationError("no NameServer address configured (namesrv_addr)")
        self.config = config
        self.client_ip = config.client_ip or local_ipv4()
        self.client_id = new_client_id(self.client_ip, config.instance_name)
        """The id brokers know this client by: settled by ``start``, shared with the other clients of the
        process it shares a connection with (``rocketq.client.client_links``)."""
        credentials = config.credentials
        self.sign: RequestSigner | None = None
        """Signs a request with the client's credentials (None without): every request ``remoting`` sends,
        and those a blocking caller sends itself (``rocketq.client.blocking_send``)."""
        if credentials is not None:
            self.sign = credentials.sign
        self._handlers = dict(handlers or {})
        self.consumer_group = consumer_group
        self._link: ClientLink | None = None
        self.remoting = RemotingClient(handlers=handlers, sign=self.sign)
        """The connections to NameServers and brokers: until ``start`` this client's own (unused), from it
        the ones it shares."""
        self.routes: dict[str, TopicRouteData] = {}
        self.broker_addrs: dict[str, dict[int, str]] = {}
        self.route_listeners: list[Callable[[str, TopicRouteData], None]] = []
        self.producer_groups: set[str] = set()
        self.consumer_data: Callable[[], list[ConsumerData]] = list
        self._namesrv_index = 0
        self._tasks: list[asyncio.Task[Any]] = []

    async def start(self) -> None:
        """Join the process's shared connection (``rocketq.client.client_links``) and start the route polls
        and heartbeats."""
        if self._link is None:
            self._link = loop_links().join(
                self.config,
                self.client_ip,
                self.sign,
                producer_groups=frozenset(self.producer_groups),
                consumer_group=self.consumer_group,
                handlers=self._handlers,
            )
            self.remoting = self._link.remoting
            self.client_id = self._link.client_id
        self._tasks.append(
            asyncio.create_task(self._every(self.config.poll_name_server_interval_s, self.refresh_routes))
        )
        self._tasks.append(asyncio.create_task(self._every(self.config.heartbeat_broker_interval_s, self.heartbeat)))

    async def _every(self, interval_s: float, action: Callable[[], Any]) -> None:
        while True:
            await self.config.clock.sleep(interval_s)
            try:
                await action()
            except Exception as exc:
                log.warning("client background task %s failed: %s", getattr(action, "__name__", action), exc)

    # -- NameServer -----------------------------------------------------------------------------------

    async def invoke_namesrv(self, request: RemotingCommand, timeout_s: float | None = None) -> RemotingCommand:
        """Ask a NameServer, moving on to the next one when it cannot be reached."""
        servers = self.config.name_servers
        last_error: Exception | None = None
        for attempt in range(len(servers)):
            address = servers[(self._namesrv_index + attempt) % len(servers)]
            try:
                response = await self.remoting.invoke(address, request, timeout_s or self.config.request_timeout_s)
                self._namesrv_index = (self._namesrv_index + attempt) % len(servers)
                return response
            except RemotingError as exc:
                last_error = exc
        raise MQConnectionError(f"no NameServer answered ({', '.join(servers)}): {last_error}") from last_error

    async def fetch_route(self, topic: str) -> TopicRouteData | None:
        """The topic's route from a NameServer; None when the NameServer does not know the topic."""
        fields = GetRouteInfoRequestHeader(topic=topic).to_ext_fields()
        response = await self.invoke_namesrv(
            make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, opaque=next_opaque(), ext_fields=fields)
        )
        if response.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        if response.code != ResponseCode.SUCCESS:
            raise broker_error(response.code, response.remark, "name server")
        return TopicRouteData.decode(response.body)

    async def update_route(self, topic: str) -> TopicRouteData | None:
        route = await self.fetch_route(topic)
        if route is not None:
            self.routes[topic] = route
            for broker in route.broker_datas:
                self.broker_addrs[broker.broker_name] = dict(broker.broker_addrs)
            for listener in self.route_listeners:
                listener(topic, route)
        return route

    async def refresh_routes(self) -> None:
        for topic in list(self.routes):
            with contextlib.suppress(MQClientError):
                await self.update_route(topic)

    def master_address(self, broker_name: str) -> str | None:
        addrs = self.broker_addrs.get(broker_name)  # (no empty dict made per send for a default)
        return None if addrs is None else addrs.get(MASTER_ID)

    def broker_address(self, broker_name: str, broker_id: int = MASTER_ID) -> tuple[str, int] | None:
        """The address and id of broker ``broker_id`` of ``broker_name`` when the route has it, else of
        its master, else of its lowest-numbered slave (a group whose master is gone is read from a slave,
        as Java's findBrokerAddressInSubscribe does); None when the route has none of the group."""
        addrs = self.broker_addrs.get(broker_name)
        if addrs is None:
            return None
        address = addrs.get(broker_id)  # (the usual case, without the sorted candidates made)
        if address is not None:
            return address, broker_id
        for candidate in (MASTER_ID, *sorted(addrs)):
            address = addrs.get(candidate)
            if address is not None:
                return address, candidate
        return None

    def fallback_broker_id(self, broker_name: str, failed_id: int) -> int:
        """Where a queue's next pull goes after broker ``failed_id`` could not be reached: the master,
        or when the master failed the group's first slave (the route may still list a dead master)."""
        if failed_id != MASTER_ID:
            return MASTER_ID
        slaves = sorted(i for i in self.broker_addrs.get(broker_name, {}) if i != MASTER_ID)
        return slaves[0] if slaves else MASTER_ID

    async def find_master(self, topic: str, broker_name: str) -> str | None:
        """The master address of ``broker_name``, asking the name servers for ``topic``'s route when it is
        not known yet; None when the route has no master of that name."""
        address = self.master_address(broker_name)
        if address is None:
            await self.update_route(topic)
            address = self.master_address(broker_name)
        return address

    async def queue_offset(self, code: int, topic: str, broker_name: str, fields: dict[str, str]) -> int:
        """A queue offset the queue's master answers (GET_MIN/MAX_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP), or
        its slave when the route has no master or the master cannot be reached; MQClientError when no
        broker of the group is known or none answers with one."""
        name = RequestCode(code).name
        where = f"{topic}@{broker_name}:{fields.get('queueId')}"
        address = await self.find_master(topic, broker_name)
        if address is None:  # a group whose master is gone: its slave has the same queues
            found = self.broker_address(broker_name)
            address = None if found is None else found[0]
        if address is None:
            raise RouteNotFoundError(f"{name} for {where}: no broker of the group is known")
        request = make_request(code, opaque=next_opaque(), ext_fields=fields)
        try:
            response = await self.invoke_broker(address, request, self.config.request_timeout_s)
        except RemotingError as exc:
            # a master that cannot be reached (stopped, while the route still lists it): its slave has
            # the same queues at the same offsets
            slave = self.broker_addrs.get(broker_name, {}).get(self.fallback_broker_id(broker_name, MASTER_ID))
            if address != self.master_address(broker_name) or slave is None or slave == address:
                raise MQConnectionError(f"{name} for {where}: {exc}") from exc
            log.info("%s for %s: master %s did not answer (%s), asking slave %s", name, where, address, exc, slave)
            try:
                response = await self.invoke_broker(slave, request, self.config.request_timeout_s)
            except RemotingError as again:
                raise MQConnectionError(f"{name} for {where}: {exc}; slave {slave}: {again}") from again
        offset = response.ext_fields.get("offset")
        if response.code != ResponseCode.SUCCESS or offset is None:
            raise MQClientError(f"{name} for {where} answered {response.code}: {response.remark}")
        return int(offset)

    async def update_broker_addresses(self) -> None:
        """Learn every broker's addresses from the name servers' cluster table (a client that has not
        looked up a topic yet knows none)."""
        request = make_request(RequestCode.GET_BROKER_CLUSTER_INFO, opaque=next_opaque())
        response = await self.invoke_namesrv(request)
        if response.code != ResponseCode.SUCCESS:
            raise broker_error(response.code, response.remark, "name server")
        for name, data in ClusterInfo.decode(response.body).broker_addr_table.items():
            self.broker_addrs[name] = dict(data.broker_addrs)

    # -- brokers --------------------------------------------------------------------------------------

    @overload
    async def invoke_broker(self, address: str, request: RemotingCommand, timeout_s: float) -> RemotingCommand: ...

    @overload
    async def invoke_broker(
        self, address: str, request: RemotingCommand, timeout_s: float, read: Callable[[RemotingCommand], T]
    ) -> T: ...

    async def invoke_broker(
        self,
        address: str,
        request: RemotingCommand,
        timeout_s: float,
        read: Callable[[RemotingCommand], Any] | None = None,
    ) -> Any:
        """A request to a broker; ``read`` as in ``RemotingClient.invoke`` (made of the response in the
        read that brought it)."""
        if read is None:
            return await self.remoting.invoke(address, request, timeout_s)
        return await self.remoting.invoke(address, request, timeout_s, read)

    def _heartbeat_body(self) -> bytes:
        return HeartbeatData(
            client_id=self.client_id,
            producer_data_set=[ProducerData(group_name=g) for g in sorted(self.producer_groups)],
            consumer_data_set=self.consumer_data(),
        ).encode()

    async def heartbeat(self) -> None:
        """HEART_BEAT to every master broker we know (every 30 s and when groups change); a client with
        consumers to the slaves too, which serve its pulls when told to or when their master is gone."""
        body = self._heartbeat_body()
        addresses = self._client_addresses()
        for address in sorted(addresses):
            request = make_request(RequestCode.HEART_BEAT, opaque=next_opaque(), body=body)
            try:
                response = await self.remoting.invoke(address, request, self.config.request_timeout_s)
                if response.code != ResponseCode.SUCCESS:
                    log.warning("heartbeat to %s refused: %s", address, response.remark)
            except RemotingError as exc:
                log.info("heartbeat to %s failed: %s", address, exc)

    def _client_addresses(self) -> set[str]:
        """The brokers a heartbeat goes to: masters, and slaves too when this client has consumers."""
        if self.consumer_data():
            return {address for addrs in self.broker_addrs.values() for address in addrs.values()}
        return {addrs[MASTER_ID] for addrs in self.broker_addrs.values() if MASTER_ID in addrs}

    async def unregister(self, *, producer_group: str | None = None, consumer_group: str | None = None) -> None:
        fields = UnregisterClientRequestHeader(
            client_id=self.client_id, producer_group=producer_group or "", consumer_group=consumer_group or ""
        ).to_ext_fields()
        addresses = self._client_addresses()
        for address in sorted(addresses):
            request = make_request(RequestCode.UNREGISTER_CLIENT, opaque=next_opaque(), ext_fields=fields)
            with contextlib.suppress(RemotingError):
                await self.remoting.invoke(address, request, self.config.request_timeout_s)

    async def aclose(self) -> None:
        """Stop the background work and leave the shared connection (the last client closes it)."""
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
        link, self._link = self._link, None
        if link is None:
            await self.remoting.aclose()
            return
        await loop_links().leave(
            link, producer_groups=frozenset(self.producer_groups), consumer_group=self.consumer_group
        )
