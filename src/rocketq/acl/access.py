"""What a request needs, and whether the rules of a ``plain_acl.yml`` let its sender have it.

What each request code needs follows RocketMQ 4.x's ``PlainAccessValidator``, with the differences
marked *stricter* (rocketq refuses what RocketMQ lets through) or *different*:

========================================  ==========================================================
SEND_MESSAGE, SEND_MESSAGE_V2             PUB on the topic; a retry topic ``%RETRY%G``: SUB on group G
SEND_BATCH_MESSAGE, SEND_REPLY_MESSAGE*   the same (*stricter*: RocketMQ checks no topic)
CONSUMER_SEND_MSG_BACK                    SUB on the group
PULL_MESSAGE                              SUB on the topic and on the group
QUERY_MESSAGE                             SUB on the topic
HEART_BEAT                                SUB on each consumer group and each topic it subscribes to
UNREGISTER_CLIENT                         SUB on the consumer group (none for a producer)
GET_CONSUMER_LIST_BY_GROUP                SUB on the group
UPDATE_CONSUMER_OFFSET                    SUB on the topic and on the group
QUERY_CONSUMER_OFFSET                     the same (*stricter*: RocketMQ needs only a valid signature)
topic and group create/update/delete,     an admin account (RocketMQ: these five)
broker config update
offset resets, ACL changes, file and      an admin account (*stricter*: RocketMQ needs only a valid
queue cleanups, group offset cloning      signature)
anything else                             a valid signature of any account
========================================  ==========================================================

*Different*: a send to a retry topic needs SUB on the group the topic is named after; RocketMQ looks
at the group its sender names instead (a Java consumer's fallback sends name its internal producer
group). An account's ``whiteRemoteAddress`` spares its peers the signature only: its permissions
still apply, where RocketMQ lets them do anything. As in RocketMQ, a peer in
``globalWhiteRemoteAddresses`` needs no account at all, and a PUB to the message-trace topic
``RMQ_SYS_TRACE_TOPIC`` needs only a valid signature.
"""

from __future__ import annotations

from typing import Final

from rocketq.acl.addresses import Host
from rocketq.acl.rules import Account, AclRules, Perm, describe, permits
from rocketq.acl.signing import ACCESS_KEY, SigningKey
from rocketq.common.group_topics import RETRY_PREFIX, retry_topic
from rocketq.protocol import HeartbeatData, ProtocolError, RemotingCommand, RequestCode

ADMIN_CODES: Final = frozenset(
    {
        # RocketMQ's own admin-only codes
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
        # stricter than RocketMQ: they change or remove what consumers rely on
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        RequestCode.RESET_CONSUMER_OFFSET_IN_BROKER,
        RequestCode.CLONE_GROUP_OFFSET,
        RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
        RequestCode.DELETE_ACL_CONFIG,
        RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
        RequestCode.TRIGGER_DELETE_FILES,
        RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE,
        RequestCode.CLEAN_UNUSED_TOPIC,
        RequestCode.DELETE_EXPIRED_COMMITLOG,
    }
)
TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"

_SENDS: Final[dict[int, str]] = {  # code -> the ext field naming the topic
    RequestCode.SEND_MESSAGE: "topic",
    RequestCode.SEND_MESSAGE_V2: "b",
    RequestCode.SEND_BATCH_MESSAGE: "b",
    RequestCode.SEND_REPLY_MESSAGE: "topic",
    RequestCode.SEND_REPLY_MESSAGE_V2: "b",
}
# code -> (the ext field naming the group, the one naming the topic or "")
_GROUP_FIELDS: Final[dict[int, tuple[str, str]]] = {
    RequestCode.PULL_MESSAGE: ("consumerGroup", "topic"),
    RequestCode.CONSUMER_SEND_MSG_BACK: ("group", ""),
    RequestCode.UNREGISTER_CLIENT: ("consumerGroup", ""),
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: ("consumerGroup", ""),
    RequestCode.UPDATE_CONSUMER_OFFSET: ("consumerGroup", "topic"),
    RequestCode.QUERY_CONSUMER_OFFSET: ("consumerGroup", "topic"),
}


def needed(request: RemotingCommand) -> list[tuple[str, int]]:
    """The resources (topics; groups as their retry topics) ``request`` uses, with the permission each
    needs. Raises ProtocolError for a HEART_BEAT body that does not decode."""
    code, fields = request.code, request.ext_fields
    topic_field = _SENDS.get(code)
    if topic_field is not None:
        topic = fields.get(topic_field)
        if not topic:
            return []
        return [(topic, Perm.SUB if topic.startswith(RETRY_PREFIX) else Perm.PUB)]
    names = _GROUP_FIELDS.get(code)
    if names is not None:
        resources: list[tuple[str, int]] = []
        group = fields.get(names[0])
        if group:
            resources.append((retry_topic(group), Perm.SUB))
        topic = fields.get(names[1]) if names[1] else None
        if topic:
            resources.append((topic, Perm.SUB))
        return resources
    if code == RequestCode.QUERY_MESSAGE:
        topic = fields.get("topic")
        return [(topic, Perm.SUB)] if topic else []
    if code == RequestCode.HEART_BEAT:
        heartbeat = HeartbeatData.decode(request.body)
        resources = []
        for consumer in heartbeat.consumer_data_set:
            resources.append((retry_topic(consumer.group_name), Perm.SUB))
            resources.extend((subscription.topic, Perm.SUB) for subscription in consumer.subscription_data_set)
        return resources
    return []


def refusal(rules: AclRules, request: RemotingCommand, host: Host | None) -> str | None:
    """None when ``rules`` let the peer at ``host`` make ``request``; else why not, for the remark of
    the NO_PERMISSION answer (never a secret)."""
    return PeerAccess(host).refusal(rules, request)


class PeerAccess:
    """``refusal`` for the requests of one peer (a broker keeps one per connection), keeping what does
    not change from one request to the next while the rules stay the same: whether the peer is a
    global white address, the account its AccessKey names and whether the peer may skip signing for
    it, and the topics a send to was let through (what a send needs follows from its topic alone, whatever
    its code: ``needed``). The signature and the fields of each request are still checked on every
    request."""

    __slots__ = ("_access_key", "_account", "_global_white", "_key", "_rules", "_sendable", "host")

    def __init__(self, host: Host | None) -> None:
        self.host = host
        self._rules: AclRules | None = None
        self._global_white = False
        self._access_key = ""  # the AccessKey of the last request from this peer, "" before one
        self._account: Account | None = None  # its account
        self._key: SigningKey | None = None  # that account's key, when this peer must sign (not a white address)
        self._sendable: set[str] = set()  # the topics that account may send to

    def refusal(self, rules: AclRules, request: RemotingCommand) -> str | None:
        """None when ``rules`` let this peer make ``request``; else why not (see ``refusal``)."""
        if rules is not self._rules:
            self._rules = rules
            self._global_white = any(pattern.matches(self.host) for pattern in rules.global_white_addresses)
            self._access_key = ""
            self._account = None
            self._sendable.clear()
        if self._global_white:
            return None
        fields = request.ext_fields
        access_key = fields.get(ACCESS_KEY)
        if not access_key:
            return (
                f"{_name(request.code)} needs an AccessKey and a Signature: ACL is enabled on this broker"
                " (give the client an account's access key and secret key)"
            )
        account = self._account
        if account is None or access_key != self._access_key:
            account = rules.accounts.get(access_key)
            if account is None:
                return f"AccessKey {access_key!r} is not an account of this broker's ACL"
            self._access_key = access_key
            self._account = account
            self._key = None if account.white_address.matches(self.host) else account.key
            self._sendable.clear()
        key = self._key
        if key is not None and not key.verify(fields, request.body):
            return f"the Signature of {_name(request.code)} does not match AccessKey {access_key!r}: wrong secret key?"
        code = request.code
        topic_field = _SENDS.get(code)
        if topic_field is None:
            return _missing_permission(account, request)
        topic = fields.get(topic_field) or ""
        if topic in self._sendable:
            return None
        reason = _missing_permission(account, request)
        if reason is None:
            if len(self._sendable) >= _SENDABLE_MAX:
                self._sendable.clear()
            self._sendable.add(topic)
        return reason


_SENDABLE_MAX: Final = 1024
"""A peer's allowed sends are forgotten all at once beyond this many topics."""


def _missing_permission(account: Account, request: RemotingCommand) -> str | None:
    try:
        resources = needed(request)
    except ProtocolError as exc:
        return f"cannot tell what {_name(request.code)} needs: {exc}"
    if len(resources) == 1 and resources[0] == (TRACE_TOPIC, Perm.PUB):
        return None  # message traces: RocketMQ lets any account write them
    if request.code in ADMIN_CODES and not account.admin:
        return f"{_name(request.code)} needs an admin account; AccessKey {account.access_key!r} is not one"
    if account.admin and not account.resource_perms:
        return None  # an admin without per-resource rules may use everything (as in RocketMQ)
    for resource, perm in resources:
        owned = account.perm_of(resource)
        if not permits(perm, owned):
            return (
                f"AccessKey {account.access_key!r} has no {_perm_name(perm)} permission on {describe(resource)}"
                f" ({_name(request.code)})"
            )
    return None


def _perm_name(perm: int) -> str:
    return "|".join(name for name, bit in (("PUB", Perm.PUB), ("SUB", Perm.SUB)) if perm & bit) or "ANY"


def _name(code: int) -> str:
    try:
        return f"{RequestCode(code).name} ({code})"
    except ValueError:
        return f"request code {code}"
