"""A slave's copy of its master's metadata (RocketMQ's SlaveSynchronize): every ``interval_s`` it asks
the master for its topics (GET_ALL_TOPIC_CONFIG), consumer offsets (GET_ALL_CONSUMER_OFFSET), delay
offsets (GET_ALL_DELAY_OFFSET) and subscription groups (GET_ALL_SUBSCRIPTIONGROUP_CONFIG) and takes
them as they are. The master's broker address comes from the NameServer's answer to the slave's
registration. A failed round is logged and tried again the next time.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

import msgspec

from rocketq.broker.consumer_offsets import ConsumerOffsetManager
from rocketq.broker.subscription_groups import SubscriptionGroupConfig, SubscriptionGroupManager
from rocketq.broker.topic_config import TopicConfigManager
from rocketq.protocol import RequestCode, ResponseCode, TopicConfigSerializeWrapper, make_request
from rocketq.protocol.bodies import ConsumerOffsetSerializeWrapper, SubscriptionGroupWrapper
from rocketq.remoting import RemotingClient, RemotingError
from rocketq.remoting.clock import Clock
from rocketq.remoting.connection import next_opaque

log = logging.getLogger(__name__)

SYNC_INTERVAL_S = 10.0
FIRST_SYNC_S = 3.0
REQUEST_TIMEOUT_S = 3.0


class SlaveSynchronize:
    def __init__(
        self,
        client: RemotingClient,
        *,
        topics: TopicConfigManager,
        offsets: ConsumerOffsetManager,
        groups: SubscriptionGroupManager,
        set_delay_offsets: Callable[[dict[int, int]], None],
        clock: Clock,
        interval_s: float = SYNC_INTERVAL_S,
    ) -> None:
        self._client = client
        self._topics = topics
        self._offsets = offsets
        self._groups = groups
        self._set_delay_offsets = set_delay_offsets
        self._clock = clock
        self._interval_s = interval_s
        self.master_address: str | None = None  # the master's broker address (not its HA one)
        self.rounds = 0  # complete synchronisations so far

    async def run(self) -> None:
        await self._clock.sleep(FIRST_SYNC_S)
        while True:
            if self.master_address is not None:
                try:
                    await self.sync_all(self.master_address)
                except (RemotingError, OSError, TimeoutError, ValueError, msgspec.DecodeError) as exc:
                    log.warning("slave: copying metadata from master %s failed: %s", self.master_address, exc)
            await self._clock.sleep(self._interval_s)

    async def sync_all(self, address: str) -> None:
        """One round: topics, consumer offsets, delay offsets and subscription groups from ``address``."""
        topics = TopicConfigSerializeWrapper.decode(await self._ask(address, RequestCode.GET_ALL_TOPIC_CONFIG))
        if self._topics.replace_all(topics):
            log.info("slave: took %d topics from master %s", len(topics.topic_config_table), address)
        offsets = ConsumerOffsetSerializeWrapper.decode(await self._ask(address, RequestCode.GET_ALL_CONSUMER_OFFSET))
        self._offsets.replace_all(offsets.offset_table)
        delay = json.loads(await self._ask(address, RequestCode.GET_ALL_DELAY_OFFSET) or b"{}")
        self._set_delay_offsets({int(k): int(v) for k, v in (delay.get("offsetTable") or {}).items()})
        groups = SubscriptionGroupWrapper.decode(await self._ask(address, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))
        table = {
            name: msgspec.convert(msgspec.to_builtins(config), SubscriptionGroupConfig, strict=False)
            for name, config in groups.subscription_group_table.items()
        }
        self._groups.replace_all(table, groups.data_version)
        self.rounds += 1

    async def _ask(self, address: str, code: int) -> bytes:
        request = make_request(code, opaque=next_opaque())
        response = await self._client.invoke(address, request, REQUEST_TIMEOUT_S)
        if response.code != ResponseCode.SUCCESS:
            raise RemotingError(f"master {address} answered {code} with {response.code}: {response.remark}")
        return bytes(response.body or b"")
