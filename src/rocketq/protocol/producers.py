"""GET_PRODUCER_CONNECTION_LIST (204): the producers of a group connected to a broker, as Java's
ProducerConnection body lists them (``rocketq admin producerConnection``)."""

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
