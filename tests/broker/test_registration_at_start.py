"""A broker is routed as soon as its ``start()`` returns: a client started right after (``rocketq up``,
then a send) finds it, with no registration period to wait for."""

from __future__ import annotations

from pathlib import Path

from rocketq.broker.server import Broker
from rocketq.namesrv import NameServer, NamesrvConfig
from rocketq.protocol import RequestCode, ResponseCode, TopicRouteData, make_request
from rocketq.remoting import RemotingClient
from rocketq.remoting.connection import next_opaque

from .conftest import broker_config


async def test_start_returns_once_the_name_server_routes_the_broker(tmp_path: Path) -> None:
    async with NameServer(NamesrvConfig(listen_host="127.0.0.1", listen_port=0)) as namesrv:
        config = broker_config(tmp_path / "broker", namesrv_addr=namesrv.address, register_name_server_period_ms=60_000)
        async with Broker(config) as broker:
            client = RemotingClient()
            try:
                fields = {"topic": "TBW102"}
                request = make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, opaque=next_opaque(), ext_fields=fields)
                response = await client.invoke(namesrv.address, request, 3)
            finally:
                await client.aclose()
            assert response.code == ResponseCode.SUCCESS, response.remark
            route = TopicRouteData.decode(response.body)
            assert [data.broker_addrs[0] for data in route.broker_datas] == [broker.address]
