"""Admin bodies of a broker's clients and traffic: GET_PRODUCER_CONNECTION_LIST (204), the producers of
a group connected to a broker (Java's ProducerConnection, ``rocketq admin producerConnection``), and
VIEW_BROKER_STATS_DATA (315), a topic's or group's messages over the last minute, hour and day (Java's
BrokerStatsData, ``rocketq admin statsAll``)."""

from __future__ import annotations

import msgspec

from rocketq.protocol.bodies import ClientConnection, JsonBody
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.ext_fields import RequestHeader


class GetProducerConnectionListRequestHeader(RequestHeader, frozen=True, kw_only=True):
    CODE = RequestCode.GET_PRODUCER_CONNECTION_LIST

    producer_group: str


class ProducerConnection(JsonBody, frozen=True, kw_only=True):
    connection_set: list[ClientConnection] = msgspec.field(default_factory=list)


class ViewBrokerStatsDataRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """VIEW_BROKER_STATS_DATA (315): ``stats_name`` TOPIC_PUT_NUMS (key: a topic) or GROUP_GET_NUMS
    (key: ``topic@group``)."""

    CODE = RequestCode.VIEW_BROKER_STATS_DATA

    stats_name: str
    stats_key: str


class BrokerStatsItem(JsonBody, frozen=True, kw_only=True):
    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0


class BrokerStatsData(JsonBody, frozen=True, kw_only=True):
    stats_minute: BrokerStatsItem = msgspec.field(default_factory=BrokerStatsItem)
    stats_hour: BrokerStatsItem = msgspec.field(default_factory=BrokerStatsItem)
    stats_day: BrokerStatsItem = msgspec.field(default_factory=BrokerStatsItem)
