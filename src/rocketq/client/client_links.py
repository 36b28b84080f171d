"""The connection to the brokers that a process's clients share (the shared half of Java's MQClientInstance).

RocketMQ's Java client keeps one ``MQClientInstance`` per client id in a process: its producers and
consumers share one connection per broker and one client id. rocketq does the same: the producers and
consumers started on one event loop with equal ``ClientConfig`` s (the clock too: the same object) share
one ``ClientLink``: its client id, its ``RemotingClient`` (one connection per broker), and the answering
of the requests brokers send them. A producer and a push consumer of one process then talk to a broker
over one connection (the pull answer a send wakes still leaves before the send's answer:
``Connection.send_frame``'s ``at_once``).

Unlike Java, which refuses a second producer (or consumer) of a group in one instance, a client whose
group is already on a link gets a link of its own (a second member of a consumer group needs its own
client id to get its share of the queues). Each ``ClientInstance`` keeps its own routes and heartbeats:
a broker keeps a client's groups per group, so each member's heartbeat names its own groups.
"""

from __future__ import annotations

import asyncio
import os
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field

from rocketq.client.config import ClientConfig
from rocketq.client.message import decode_messages
from rocketq.common.message import Property
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode, make_response
from rocketq.protocol.errors import ProtocolError
from rocketq.remoting import RemotingClient, RequestHandler
from rocketq.remoting.client import RequestSigner
from rocketq.remoting.connection import Connection

Handlers = Mapping[int, RequestHandler]


def new_client_id(client_ip: str, instance_name: str) -> str:
    """A client id as brokers list it: ``ip@pid#instanceName#n``, unique within the process (``n``), so two
    members of one consumer group in one process each get their share of the queues."""
    return f"{client_ip}@{os.getpid()}#{instance_name}#{time.monotonic_ns()}"


def request_group(request: RemotingCommand) -> str | None:
    """The producer or consumer group a broker's request to a client is for: the consumer group in the
    header of NOTIFY_CONSUMER_IDS_CHANGED, GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY and
    RESET_CONSUMER_CLIENT_OFFSET; a transaction check's producer group in its message's properties."""
    if request.code == RequestCode.CHECK_TRANSACTION_STATE:
        try:
            messages = decode_messages(request.body)
        except (ProtocolError, ValueError):
            return None
        return messages[0].properties.get(Property.PRODUCER_GROUP) if messages else None
    fields = request.ext_fields
    return fields.get("consumerGroup") or fields.get("group")


@dataclass(eq=False)
class ClientLink:
    """What the clients sharing one client id share: the id, one connection per broker, and who answers
    the brokers' requests (by group)."""

    key: tuple[ClientConfig, object]
    client_id: str
    remoting: RemotingClient = field(init=False)
    sign: RequestSigner | None = None
    producers: dict[str, Handlers] = field(default_factory=dict)
    consumers: dict[str, Handlers] = field(default_factory=dict)
    others: int = 0  # members with no group (admin connections, offline readers)

    def __post_init__(self) -> None:
        self.remoting = RemotingClient(handlers=self._routes(), sign=self.sign)

    @property
    def members(self) -> int:
        return len(self.producers) + len(self.consumers) + self.others

    def takes(self, producer_groups: frozenset[str], consumer_group: str | None) -> bool:
        """Whether a client of these groups can join (none of its groups is on the link already)."""
        return producer_groups.isdisjoint(self.producers) and consumer_group not in self.consumers

    def _routes(self) -> dict[int, RequestHandler]:
        codes = (
            RequestCode.CHECK_TRANSACTION_STATE,
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
            RequestCode.GET_CONSUMER_RUNNING_INFO,
            RequestCode.CONSUME_MESSAGE_DIRECTLY,
        )
        return {code: self._route for code in codes}

    def _handler(self, request: RemotingCommand) -> RequestHandler | None:
        members = self.producers if request.code == RequestCode.CHECK_TRANSACTION_STATE else self.consumers
        candidates = [handlers[request.code] for handlers in members.values() if request.code in handlers]
        if len(candidates) == 1:  # the usual case: one member answers this code
            return candidates[0]
        group = request_group(request)
        handlers = members.get(group) if group is not None else None
        return None if handlers is None else handlers.get(request.code)

    async def _route(self, request: RemotingCommand, connection: Connection) -> RemotingCommand | None:
        handler = self._handler(request)
        if handler is None:
            group = request_group(request)
            return make_response(
                request, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f"no client of group {group} answers {request.code}"
            )
        return await handler(request, connection)


class ClientLinks:
    """The links of one event loop's clients."""

    def __init__(self) -> None:
        self._links: list[ClientLink] = []

    def join(
        self,
        config: ClientConfig,
        client_ip: str,
        sign: RequestSigner | None,
        *,
        producer_groups: frozenset[str] = frozenset(),
        consumer_group: str | None = None,
        handlers: Handlers | None = None,
    ) -> ClientLink:
        """The link a client of ``config`` shares: an open one of the same configuration none of whose
        members has one of its groups, else a new one."""
        key = (config, config.clock)
        joinable = (link for link in self._links if link.key == key and link.takes(producer_groups, consumer_group))
        link = next(joinable, None)
        if link is None:
            link = ClientLink(key, new_client_id(client_ip, config.instance_name), sign)
            self._links.append(link)
        handlers = handlers or {}
        for group in producer_groups:
            link.producers[group] = handlers
        if consumer_group is not None:
            link.consumers[consumer_group] = handlers
        if not producer_groups and consumer_group is None:
            link.others += 1
        return link

    async def leave(
        self, link: ClientLink, *, producer_groups: frozenset[str] = frozenset(), consumer_group: str | None = None
    ) -> None:
        """A client leaves its link; the last one closes the link's connections."""
        for group in producer_groups:
            link.producers.pop(group, None)
        if consumer_group is not None:
            link.consumers.pop(consumer_group, None)
        if not producer_groups and consumer_group is None:
            link.others -= 1
        if link.members == 0:
            if link in self._links:
                self._links.remove(link)
            await link.remoting.aclose()


_LOOP_LINKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ClientLinks] = weakref.WeakKeyDictionary()


def loop_links() -> ClientLinks:
    """The running event loop's client links (made on first use, dropped with the loop)."""
    loop = asyncio.get_running_loop()
    links = _LOOP_LINKS.get(loop)
    if links is None:
        links = _LOOP_LINKS[loop] = ClientLinks()
    return links
