"""Broker registration with every NameServer: at start, every ``registerNameServerPeriod``, and soon
after a topic change (BrokerController.registerBrokerAll)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from rocketq.broker.context import BrokerContext
from rocketq.protocol import RegisterBrokerBody, RequestCode, ResponseCode, make_request
from rocketq.protocol.headers import (
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnregisterBrokerRequestHeader,
)
from rocketq.remoting import RemotingClient, RemotingError
from rocketq.remoting.connection import next_opaque

log = logging.getLogger(__name__)

REGISTER_TIMEOUT_S = 6.0
MIN_PERIOD_MS, MAX_PERIOD_MS = 10_000, 60_000
RETRY_START_S = 0.5  # first retry after a failed registration, doubling up to the period


class Registrar:
    def __init__(
        self,
        context: BrokerContext,
        client: RemotingClient,
        *,
        ha_address: str = "",
        on_master: Callable[[str, str], None] | None = None,
    ) -> None:
        """``ha_address``: this broker's HA service ``host:port`` ("" without one); ``on_master``: told
        the master's HA address and broker address a NameServer names in its answer (a slave's
        registration, once its master is registered)."""
        self._context = context
        self._client = client
        self.ha_address = ha_address  # (a broker that becomes master, or stops being one, changes it)
        self._on_master = on_master
        self._wanted = asyncio.Event()
        self.registrations = 0

    def trigger(self) -> None:
        """Register again soon (topic table changed)."""
        self._wanted.set()

    async def register_all(self) -> bool:
        """Register with every name server; False when one of them could not be reached."""
        context = self._context
        config = context.config
        header = RegisterBrokerRequestHeader(
            broker_name=config.broker_name,
            broker_addr=context.address,
            cluster_name=config.broker_cluster_name,
            ha_server_addr=self.ha_address,
            broker_id=config.broker_id,
            compressed=False,
        )
        body = RegisterBrokerBody(topic_config_serialize_wrapper=context.topics.wrapper()).encode()
        results = await asyncio.gather(
            *(self._register(address, header.to_ext_fields(), body) for address in config.name_servers),
            return_exceptions=True,
        )
        failed = False
        for address, result in zip(config.name_servers, results, strict=True):
            if isinstance(result, BaseException):
                failed = True
                log.warning("broker %s: registration with %s failed: %s", config.broker_name, address, result)
            elif result[0] and self._on_master is not None:
                self._on_master(*result)
        self.registrations += 1
        return not failed

    async def _register(self, address: str, fields: dict[str, str], body: bytes) -> tuple[str, str]:
        """Register with one NameServer; the master's HA and broker addresses it answers with ("" when
        none: this broker is a master, or its master is not registered)."""
        request = make_request(RequestCode.REGISTER_BROKER, opaque=next_opaque(), ext_fields=fields, body=body)
        response = await self._client.invoke(address, request, REGISTER_TIMEOUT_S)
        if response.code != ResponseCode.SUCCESS:
            raise RemotingError(f"name server {address} answered {response.code}: {response.remark}")
        answer = RegisterBrokerResponseHeader.from_ext_fields(response.ext_fields or {})
        return answer.ha_server_addr or "", answer.master_addr or ""

    async def run(self, *, registered: bool | None = None) -> None:
        """Register every period, soon after a topic change, and again soon (backing off) after a
        failure. ``registered``: the outcome of a registration just made (the first one, which
        ``Broker.start`` awaits), so the loop starts by waiting; None registers at once."""
        period = min(max(self._context.config.register_name_server_period_ms, MIN_PERIOD_MS), MAX_PERIOD_MS) / 1000
        retry_s = RETRY_START_S
        while True:
            self._wanted.clear()
            if registered is None:
                registered = await self.register_all()
            if registered:
                wait_s, retry_s = period, RETRY_START_S
            else:  # a name server is not up yet (or restarting): try again soon, backing off
                wait_s, retry_s = min(retry_s, period), min(retry_s * 2, period)
            registered = None
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait_s):
                    await self._wanted.wait()
                await asyncio.sleep(0.05)  # gather a burst of topic changes into one registration

    async def unregister_all(self, broker_id: int | None = None) -> None:
        """Unregister from every NameServer, as ``broker_id`` (by default the one it registers as now: a
        broker whose role changed unregisters its former id)."""
        config = self._context.config
        header = UnregisterBrokerRequestHeader(
            broker_name=config.broker_name,
            broker_addr=self._context.address,
            cluster_name=config.broker_cluster_name,
            broker_id=config.broker_id if broker_id is None else broker_id,
        )
        for address in config.name_servers:
            request = make_request(
                RequestCode.UNREGISTER_BROKER, opaque=next_opaque(), ext_fields=header.to_ext_fields()
            )
            try:
                await self._client.invoke(address, request, 3)
            except RemotingError as exc:
                log.info("unregistering from %s failed: %s", address, exc)
