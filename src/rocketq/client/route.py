"""Topic routes as a producer uses them: the writable queues of master brokers, in a stable order."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rocketq.client.errors import RouteNotFoundError
from rocketq.client.message import MessageQueue
from rocketq.protocol import TopicRouteData

if TYPE_CHECKING:
    from rocketq.client.instance import ClientInstance

PERM_WRITE = 2
PERM_READ = 4
MASTER_ID = 0


@dataclass(slots=True)
class TopicPublishInfo:
    """A topic's queues to send to, and where the round-robin over them stands."""

    route: TopicRouteData
    queues: list[MessageQueue]
    ordered: bool = False
    _index: int = field(default_factory=lambda: random.randrange(1 << 16))

    def next_index(self) -> int:
        """The round-robin's next index (the queue ``index % len(queues)``). A plain int, not an
        ``itertools.count``, whose values past 256 were a Python int made and freed per send: a thread
        sending beside the loop (``rocketq.client.blocking_send``) may, interpreted, read the index the
        loop reads too, and both sends then go to the same queue (as Java's per-thread index may)."""
        index = self._index
        self._index = index + 1
        return index


def publish_info(topic: str, route: TopicRouteData) -> TopicPublishInfo:
    masters = {b.broker_name for b in route.broker_datas if MASTER_ID in b.broker_addrs}
    queues: list[MessageQueue] = []
    if route.order_topic_conf:
        for item in route.order_topic_conf.split(";"):
            name, _, count = item.partition(":")
            if count.isdigit():
                queues.extend(MessageQueue(topic, name, i) for i in range(int(count)))
        return TopicPublishInfo(route, queues, ordered=True)
    for data in sorted(route.queue_datas, key=lambda q: q.broker_name):
        if data.perm & PERM_WRITE and data.broker_name in masters:
            queues.extend(MessageQueue(topic, data.broker_name, i) for i in range(data.write_queue_nums))
    return TopicPublishInfo(route, queues)


async def lookup_publish_info(
    instance: ClientInstance, topic: str, create_topic_key: str, default_queue_nums: int
) -> TopicPublishInfo:
    """``topic``'s route asked of the NameServers; for a topic that does not exist yet, the template
    ``create_topic_key``'s brokers (their first ``default_queue_nums`` queues), on which the broker creates
    it at the first send. RouteNotFoundError when there is nowhere to send."""
    route = await instance.update_route(topic)
    if route is not None:
        info = publish_info(topic, route)
    else:  # unknown topic: send through the template's brokers; the broker creates the topic
        template = await instance.update_route(create_topic_key)
        if template is None:
            raise RouteNotFoundError(
                f"topic {topic!r} does not exist and no broker creates topics on first send (no"
                f" {create_topic_key} route: autoCreateTopicEnable=false): create it with"
                f" `rocketq admin updateTopic -t {topic} -c <cluster>`, or set autoCreateTopicEnable=true in"
                " broker.conf"
            )
        info = publish_info(topic, template)
        info.queues = [q for q in info.queues if q.queue_id < default_queue_nums]
    if not info.queues:
        raise RouteNotFoundError(f"topic {topic!r} has no writable queue on a master broker")
    return info


def subscribe_queues(topic: str, route: TopicRouteData) -> list[MessageQueue]:
    return sorted(
        MessageQueue(topic, data.broker_name, i)
        for data in route.queue_datas
        if data.perm & PERM_READ
        for i in range(data.read_queue_nums)
    )


def master_address(route: TopicRouteData, broker_name: str) -> str | None:
    for data in route.broker_datas:
        if data.broker_name == broker_name:
            return data.broker_addrs.get(MASTER_ID)
    return None
