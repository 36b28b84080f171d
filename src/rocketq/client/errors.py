"""Client errors. Every one is an ``MQClientError``; the subclasses say what kind of failure it is:

- ``ValidationError`` (also a ``ValueError``): a bad argument or message, refused before anything is
  sent (an invalid topic name, an empty or oversized body, an empty batch).
- ``RouteNotFoundError``: the NameServers know no route (or no master broker) for a topic.
- ``MQConnectionError``: no NameServer or broker could be reached (refused, timed out, connection lost);
  the message names the address and the transport error.
- ``BrokerResponseError``: a broker or NameServer answered with an error code; its subclass is chosen by
  the code (``TopicNotExistError``, ``SystemBusyError``, ...).

A client used before ``start()`` or after ``aclose()`` raises ``MQClientError`` itself.
"""

from __future__ import annotations

from typing import ClassVar

from rocketq.common.errors import RocketqError
from rocketq.protocol import ResponseCode


class MQClientError(RocketqError):
    """A client-side failure: bad argument, no route, client not started, all retries failed."""


class ValidationError(MQClientError, ValueError):
    """A bad argument or message, refused before anything was sent."""


class RouteNotFoundError(MQClientError):
    """No route for a topic: the NameServers do not know it, or none of its brokers has a master."""


class MQConnectionError(MQClientError):
    """No NameServer or broker could be reached, or the connection broke before an answer came."""


class BrokerResponseError(MQClientError):
    """A broker or NameServer answered with an error code."""

    code: ClassVar[int] = -1
    retriable: ClassVar[bool] = False
    refresh_route: ClassVar[bool] = False

    def __init__(self, code: int, remark: str | None, address: str = "") -> None:
        self.response_code = code
        self.remark = remark or ""
        self.address = address
        super().__init__(f"{address or 'server'} answered {_code_name(code)} ({code}): {self.remark}")


def _code_name(code: int) -> str:
    try:
        return ResponseCode(code).name
    except ValueError:
        return "UNKNOWN"


class BrokerSystemError(BrokerResponseError):
    code = ResponseCode.SYSTEM_ERROR
    retriable = True


class SystemBusyError(BrokerResponseError):
    code = ResponseCode.SYSTEM_BUSY
    retriable = True


class TopicNotExistError(BrokerResponseError):
    code = ResponseCode.TOPIC_NOT_EXIST
    refresh_route = True


class ServiceNotAvailableError(BrokerResponseError):
    code = ResponseCode.SERVICE_NOT_AVAILABLE
    retriable = True
    refresh_route = True


class NoPermissionError(BrokerResponseError):
    code = ResponseCode.NO_PERMISSION


class MessageIllegalError(BrokerResponseError):
    code = ResponseCode.MESSAGE_ILLEGAL


class UnknownBrokerError(BrokerResponseError):
    """A code without a class of its own."""


_BY_CODE: dict[int, type[BrokerResponseError]] = {
    cls.code: cls
    for cls in (
        BrokerSystemError,
        SystemBusyError,
        TopicNotExistError,
        ServiceNotAvailableError,
        NoPermissionError,
        MessageIllegalError,
    )
}


def broker_error(code: int, remark: str | None, address: str = "") -> BrokerResponseError:
    return _BY_CODE.get(code, UnknownBrokerError)(code, remark, address)
