"""Everything a request handler may touch, in one object the server builds and the handlers share."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final, TypeVar

from rocketq.broker.client_manager import ClientManager
from rocketq.broker.config import BrokerConfig, BrokerRole
from rocketq.broker.consume_rates import ConsumeRates
from rocketq.broker.consumer_filters import ConsumerFilterManager
from rocketq.broker.consumer_offsets import ConsumerOffsetManager
from rocketq.broker.grouped_puts import GroupedPuts
from rocketq.broker.long_polling import LongPolling
from rocketq.broker.loop_dispatch import FlushWaits, LoopDispatch
from rocketq.broker.put_traffic import PutTraffic
from rocketq.broker.rebalance_locks import RebalanceLockTable
from rocketq.broker.runtime_stats import PullCounters, StatsWindows, TpsSampler
from rocketq.broker.subscription_groups import SubscriptionGroupManager
from rocketq.broker.topic_config import TopicConfigManager
from rocketq.common.message_id import encode_host
from rocketq.protocol import RemoteProtocolError, RemotingCommand, ResponseCode, make_response
from rocketq.protocol.ext_fields import ExtFieldsHeader
from rocketq.remoting import Connection, RequestHandler
from rocketq.remoting.clock import SYSTEM_CLOCK, Clock
from rocketq.store import MessageStore

if TYPE_CHECKING:
    from rocketq.broker.idempotent_sends import IdempotentSends
    from rocketq.broker.transactions.service import TransactionService
    from rocketq.replication.state import ReplicationState

log = logging.getLogger(__name__)

_SLAVE: Final = BrokerRole.SLAVE  # (an enum member bound once: see rocketq.native.modules on enum members)


async def _nothing() -> None:
    return None


@dataclass(slots=True, kw_only=True)
class BrokerContext:
    config: BrokerConfig
    store: MessageStore
    topics: TopicConfigManager
    offsets: ConsumerOffsetManager
    groups: SubscriptionGroupManager
    clients: ClientManager
    long_polling: LongPolling
    dispatch: LoopDispatch  # puts are made with dispatch=False and request this
    flush_waits: FlushWaits  # SYNC_FLUSH puts that wait for their group commit
    grouped_puts: GroupedPuts  # SYNC_FLUSH puts of single messages, appended per loop iteration together
    locks: RebalanceLockTable
    filters: ConsumerFilterManager  # SQL92 subscriptions (consumerFilter.json)
    address: str  # advertised "ip:port", also the storeHost of every record
    request_registration: Callable[[], None] = lambda: None  # re-register with the name servers soon
    register_now: Callable[[], Awaitable[object]] = _nothing  # re-register and wait for it
    background: set[asyncio.Task[object]] = field(default_factory=set)
    consume_rates: ConsumeRates = field(default_factory=ConsumeRates)  # consumeTps of GET_CONSUME_STATS
    put_traffic: PutTraffic = field(default_factory=PutTraffic)  # messages and bytes stored by sends, per topic
    clock: Clock = SYSTEM_CLOCK  # wall-clock time for time-dependent behaviour (tests inject a FakeClock)
    pull_counters: PullCounters = field(default_factory=PullCounters)  # pulls found/missed, messages returned
    runtime_samples: TpsSampler = field(default_factory=TpsSampler)  # the rates of GET_BROKER_RUNTIME_INFO
    stats_windows: StatsWindows = field(default_factory=StatsWindows)  # VIEW_BROKER_STATS_DATA's minute/hour/day
    boot_ms: int = 0  # when the broker started, ms since the epoch (its clock)
    config_file: Path | None = None  # the broker.conf it was started from: settings changed at run time go there
    idempotent_sends: IdempotentSends | None = None  # the idempotent-send window, in front of the send handlers
    transactions: TransactionService | None = None  # set by the broker before it serves
    delay_offsets: Callable[[], dict[int, int]] = dict  # the schedule's offset per delay level (set by the broker)
    slave_available: Callable[[], bool] = lambda: False  # a master: a slave is connected and not too far behind
    replication_state: Callable[[], ReplicationState] | None = None  # GET_BROKER_HA_STATUS (set by the broker)
    # with failover (rocketq.failover): whether this master's etcd lease surely holds; a master whose
    # lease may have lapsed takes no writes (it answers as a slave does) until it leads again or steps down
    write_fence: Callable[[], bool] | None = None

    store_host: bytes = bytes(8)  # ``address`` packed as records store it: set with ``address`` by advertise()

    def advertise(self, address: str) -> None:
        """Set the broker's advertised ``ip:port`` (known once its server listens)."""
        host, _, port = address.rpartition(":")
        self.store_host = encode_host(host, int(port))
        self.address = address

    @property
    def is_master(self) -> bool:
        """A master that may take writes now (a slave, or a fenced master, answers SERVICE_NOT_AVAILABLE).
        The config's role is read as its field, not through ``BrokerConfig.is_slave``: that property is
        interpreted, a call from compiled code on every send and committing pull."""
        fence = self.write_fence
        return self.config.broker_role is not _SLAVE and (fence is None or fence())


def reply(
    request: RemotingCommand,
    code: int,
    remark: str | None = None,
    *,
    ext_fields: dict[str, str] | None = None,
    body: bytes = b"",
) -> RemotingCommand:
    return make_response(request, code, remark, ext_fields=ext_fields, body=body)


Header = TypeVar("Header", bound=ExtFieldsHeader)


def parsed(
    kind: type[Header],
    answer: Callable[[RemotingCommand, Header], RemotingCommand | Awaitable[RemotingCommand]],
) -> RequestHandler:
    """A handler that parses the request's header as ``kind`` (SYSTEM_ERROR naming the bad field when
    it does not parse), then answers with ``answer`` (a plain or an async function)."""

    async def handle(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        try:
            header = kind.from_ext_fields(request.ext_fields)
        except RemoteProtocolError as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        response = answer(request, header)
        return await response if inspect.isawaitable(response) else response

    return handle
