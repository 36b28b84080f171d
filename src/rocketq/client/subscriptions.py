"""What a consumer subscribed to, as it tells the brokers: each topic's selector, the subscription its
heartbeats and pulls carry (stamped with a version when it is made), and, at start, whether the brokers
can filter by its SQL92 subscriptions (CHECK_CLIENT_CONFIG)."""

from __future__ import annotations

import time

from rocketq.client.errors import MQClientError
from rocketq.client.instance import ClientInstance
from rocketq.client.route import MASTER_ID
from rocketq.client.selector import MessageSelector
from rocketq.common.message import java_string_hash
from rocketq.protocol import RequestCode, ResponseCode, make_request
from rocketq.protocol.client_bodies import (
    CheckClientRequestBody,
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    MessageModel,
    SubscriptionData,
)
from rocketq.remoting.connection import next_opaque


def subscription_data(topic: str, selector: MessageSelector) -> SubscriptionData:
    """A subscription as heartbeats carry it (Java's FilterAPI.buildSubscriptionData): its expression
    type, for tags each tag's Java ``String.hashCode`` (the code the broker's ConsumeQueue filter
    compares), and a version stamped now, in milliseconds, that stays with the subscription until it is
    made again."""
    tags = sorted({part.strip() for part in selector.expression.split("||")} - {"", "*"}) if selector.is_tag else []
    return SubscriptionData(
        topic=topic,
        sub_string=selector.expression,
        sub_version=int(time.time() * 1000),
        tags_set=tags,
        code_set=[java_string_hash(tag) for tag in tags],
        expression_type=selector.expression_type,
    )


class Subscriptions:
    """A consumer's subscriptions: ``selectors`` (topic -> what of it to consume) and each one as
    heartbeats and pulls carry it."""

    def __init__(self) -> None:
        self.selectors: dict[str, MessageSelector] = {}
        self._data: dict[str, SubscriptionData] = {}  # topic -> as heartbeats carry it

    def add(self, topic: str, selector: MessageSelector) -> None:
        """Subscribe to ``topic`` (again): a new version, as in Java."""
        self.selectors[topic] = selector
        self._data[topic] = subscription_data(topic, selector)

    def remove(self, topic: str) -> None:
        self.selectors.pop(topic, None)
        self._data.pop(topic, None)

    def data(self, topic: str) -> SubscriptionData:
        """The subscription of ``topic`` as heartbeats and pulls carry it. One made without
        ``subscribe()`` (the retry topic, ``assign()``) is stamped the first time it is asked for."""
        selector = self.selector(topic)
        data = self._data.get(topic)
        if data is None or data.sub_string != selector.expression or data.expression_type != selector.expression_type:
            data = self._data[topic] = subscription_data(topic, selector)
        return data

    def selector(self, topic: str) -> MessageSelector:
        """What of ``topic`` this consumer subscribed to (every message when it did not)."""
        return self.selectors.get(topic) or MessageSelector.by_tag()

    def consumer_data(self, group: str, consume_type: str, message_model: str, consume_from_where: str) -> ConsumerData:
        """The heartbeat's entry of the consumer's ``group``, with every subscription."""
        return ConsumerData(
            group_name=group,
            consume_type=ConsumeType(consume_type),
            message_model=MessageModel(message_model),
            consume_from_where=ConsumeFromWhere(consume_from_where),
            subscription_data_set=[self.data(topic) for topic in sorted(self.selectors)],
        )


async def check_brokers_take_filters(
    instance: ClientInstance, group: str, subscriptions: Subscriptions, timeout_s: float
) -> None:
    """Ask every master broker of each SQL92-subscribed topic whether it can filter so
    (CHECK_CLIENT_CONFIG, as Java's consumers do at start); MQClientError with the broker's reason
    (``enablePropertyFilter=false``, or the expression) when one cannot."""
    for topic, selector in sorted(subscriptions.selectors.items()):
        route = instance.routes.get(topic)
        if selector.is_tag or route is None:
            continue
        body = CheckClientRequestBody(
            client_id=instance.client_id, group=group, subscription_data=subscriptions.data(topic)
        ).encode()
        for broker in sorted(route.broker_datas, key=lambda b: b.broker_name):
            address = broker.broker_addrs.get(MASTER_ID)
            if address is None:
                continue
            request = make_request(RequestCode.CHECK_CLIENT_CONFIG, opaque=next_opaque(), body=body)
            response = await instance.invoke_broker(address, request, timeout_s)
            if response.code != ResponseCode.SUCCESS:
                raise MQClientError(
                    f"broker {broker.broker_name} ({address}) refuses the SQL92 subscription to {topic}"
                    f" ({selector.expression!r}): {response.remark}"
                )
