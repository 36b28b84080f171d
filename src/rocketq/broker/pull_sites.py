"""The checks of a pull that depend only on its (group, topic, queue id) and subscription: the group's
and the topic's configs, the queue, the group's broadcasting rule, the subscription's tag codes or SQL92
filter (``check_pull``). A tag subscription's outcome is kept as the site's ``PullSite``, which the next
pulls of the same site reuse while what it was decided from stays the same (``PullSite.holds``)."""

from __future__ import annotations

from typing import Final

from rocketq.broker.client_manager import Subscription, build_subscription
from rocketq.broker.context import BrokerContext, reply
from rocketq.broker.sql_filters import pull_filter, refusal
from rocketq.broker.subscription_groups import SubscriptionGroupConfig
from rocketq.broker.topic_config import is_readable
from rocketq.filter import compile_cached, is_tag_type
from rocketq.protocol import PullMessageRequestHeader, RemotingCommand, ResponseCode, TopicConfig
from rocketq.protocol.bodies import MessageModel
from rocketq.store.message_filter import MessageFilter

FLAG_SUBSCRIPTION: Final = 0x4
"""A pull's ``sysFlag`` bit: the request carries its subscription."""

_BROADCASTING: Final = MessageModel.BROADCASTING  # (bound once: see rocketq.native.modules on enum members)


SITES_MAX: Final = 4096
"""A broker keeps at most this many ``PullSite``s (all are dropped when one more would be kept)."""


class PullSite:
    """What a pull's checks decided for one (group, topic, queue id) with a tag subscription, and what
    they decided it from: the group's and the topic's configs (frozen, replaced when they change: a
    permission, the queue count, ``consumeEnable``) and the subscription (the request's expression and
    type, or the heartbeat's ``Subscription``, also replaced when it changes). A pull finding the same
    objects and subscription again (``holds``) passes the same checks with the same tag codes, so it
    skips them; anything else checks again. A group that refuses broadcasting consumers
    (``consumeBroadcastEnable`` false) gets no site: its members' heartbeat model may change in place.
    ``tests/broker/test_pull_sites.py`` changes each input and checks the answer follows."""

    __slots__ = ("expression", "expression_type", "group_config", "heartbeat", "tags_codes", "topic_config")

    def __init__(
        self,
        group_config: SubscriptionGroupConfig,
        topic_config: TopicConfig,
        expression: str | None,
        expression_type: str | None,
        heartbeat: Subscription | None,
        tags_codes: frozenset[int] | None,
    ) -> None:
        self.group_config = group_config
        self.topic_config = topic_config
        self.expression = expression  # (the request's; None with ``heartbeat``)
        self.expression_type = expression_type
        self.heartbeat = heartbeat  # (the heartbeat's subscription, for a pull without one)
        self.tags_codes = tags_codes

    def holds(
        self,
        context: BrokerContext,
        group_config: SubscriptionGroupConfig | None,
        topic_config: TopicConfig | None,
        header: PullMessageRequestHeader,
        group: str,
        topic: str,
        sys_flag: int,
    ) -> bool:
        """Whether a pull of this site with these configs passes the checks this site passed, with its
        ``tags_codes``."""
        if group_config is not self.group_config or topic_config is not self.topic_config:
            return False
        if sys_flag & FLAG_SUBSCRIPTION:
            return (
                self.heartbeat is None
                and header.subscription == self.expression
                and header.expression_type == self.expression_type
            )
        heartbeat = self.heartbeat
        return heartbeat is not None and context.clients.subscription(group, topic) is heartbeat


def check_pull(
    context: BrokerContext,
    sites: dict[tuple[str, str, int], PullSite],
    request: RemotingCommand,
    header: PullMessageRequestHeader,
    group_config: SubscriptionGroupConfig | None,
    topic_config: TopicConfig | None,
    group: str,
    topic: str,
    queue_id: int,
    sys_flag: int,
) -> RemotingCommand | tuple[frozenset[int] | None, MessageFilter | None]:
    """A pull's checks (its group's and topic's configs as found, its queue, the group's broadcasting
    rule, its subscription): the refusal, or its tag codes (None: all) and SQL92 filter (None: a tag
    subscription). A tag subscription's outcome is kept as the site's ``PullSite``."""
    config = context.config
    if group_config is None:
        return reply(
            request,
            ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            f"subscription group [{group}] does not exist",
        )
    if not group_config.consume_enable:  # ``updateSubGroup --consume-disable``: nobody in the group may pull
        return reply(request, ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
    if topic_config is None:
        return reply(request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
    if not is_readable(topic_config.perm):
        return reply(request, ResponseCode.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden")
    if not 0 <= queue_id < topic_config.read_queue_nums:
        return reply(
            request,
            ResponseCode.SYSTEM_ERROR,
            f"queueId[{queue_id}] is illegal, topic {topic} has {topic_config.read_queue_nums}",
        )

    # ``updateSubGroup --broadcast-disable``: members that heartbeat as BROADCASTING may not pull. Java
    # checks this only for pulls without a subscription (its push consumers'); rocketq's consumers always
    # send theirs, so the check is made whenever the group's members are known here.
    broadcast_enabled = group_config.consume_broadcast_enable
    registered = context.clients.consumers.get(group)
    if registered is not None and registered.message_model == _BROADCASTING and not broadcast_enabled:
        return reply(
            request,
            ResponseCode.NO_PERMISSION,
            f"the consumer group[{group}] can not consume by broadcast way",
        )

    heartbeat: Subscription | None = None
    if sys_flag & FLAG_SUBSCRIPTION:
        subscription = build_subscription(
            topic, header.subscription, header.sub_version, header.expression_type or "TAG"
        )
    else:  # Java push consumers pull without a subscription: use the heartbeat's
        found = context.clients.subscription(group, topic)
        if found is None:
            return reply(
                request,
                ResponseCode.SUBSCRIPTION_NOT_EXIST,
                f"the consumer's subscription of {topic} does not exist",
            )
        subscription = heartbeat = found
    if is_tag_type(subscription.expression_type):
        tags_codes = None if subscription.matches_all else subscription.codes
        if broadcast_enabled:
            if len(sites) >= SITES_MAX:
                sites.clear()
            expression, expression_type = (
                (None, None) if heartbeat is not None else (header.subscription, header.expression_type)
            )
            sites[group, topic, queue_id] = PullSite(
                group_config, topic_config, expression, expression_type, heartbeat, tags_codes
            )
        return tags_codes, None
    refused = refusal(config, subscription.expression_type, subscription.expression)
    if refused is not None:
        return reply(request, *refused)
    selector = compile_cached(subscription.expression)
    return None, pull_filter(config, context.filters, group, topic, selector)
