"""What each request needs, and the decision against a plain_acl.yml (pure: no broker)."""

from __future__ import annotations

import pytest

from rocketq.acl import Credentials, PeerAccess, parse_acl_yaml, parse_host, refusal, sign
from rocketq.acl.access import needed
from rocketq.acl.rules import Perm
from rocketq.protocol import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    RemotingCommand,
    RequestCode,
    SubscriptionData,
)

RULES = parse_acl_yaml(
    """
globalWhiteRemoteAddresses: [10.0.0.*]
accounts:
  - accessKey: producer1
    secretKey: secret-p
    defaultTopicPerm: DENY
    topicPerms: [Orders=PUB, Audit=PUB|SUB, Secret=DENY]
  - accessKey: consumer1
    secretKey: secret-c
    whiteRemoteAddress: 192.168.7.{1,2}
    defaultTopicPerm: SUB
    defaultGroupPerm: DENY
    topicPerms: [Secret=DENY]
    groupPerms: [billing=SUB]
  - accessKey: operator
    secretKey: secret-o
    admin: true
  - accessKey: limited-admin
    secretKey: secret-l
    admin: true
    topicPerms: [Orders=SUB]
"""
)
HOME = parse_host("127.0.0.1")


def request(
    code: int, account: str | None, secret: str | None = None, body: bytes = b"", **fields: str
) -> RemotingCommand:
    command = RemotingCommand(code=code, ext_fields=dict(fields), body=body)
    if account is not None:
        sign(
            command, Credentials(account, secret or {"producer1": "secret-p", "consumer1": "secret-c"}.get(account, ""))
        )
    return command


def send(account: str | None, topic: str, secret: str | None = None) -> RemotingCommand:
    return request(RequestCode.SEND_MESSAGE_V2, account, secret, b"body", a="P", b=topic, e="0")


def test_sends_need_pub_on_the_topic() -> None:
    assert refusal(RULES, send("producer1", "Orders"), HOME) is None
    assert "no PUB permission on topic:Other" in str(refusal(RULES, send("producer1", "Other"), HOME))
    assert "no PUB permission on topic:Secret" in str(refusal(RULES, send("producer1", "Secret"), HOME))
    v1 = request(RequestCode.SEND_MESSAGE, "producer1", topic="Orders", producerGroup="P")
    batch = request(RequestCode.SEND_BATCH_MESSAGE, "producer1", b="Secret", a="P")  # stricter than RocketMQ
    assert refusal(RULES, v1, HOME) is None
    assert "topic:Secret" in str(refusal(RULES, batch, HOME))


def test_signature_failures_say_what_is_missing() -> None:
    unsigned = request(RequestCode.SEND_MESSAGE_V2, None, b="Orders")
    assert "needs an AccessKey and a Signature" in str(refusal(RULES, unsigned, HOME))
    cpp_anonymous = request(RequestCode.SEND_MESSAGE_V2, "", "", b="Orders")  # what the C++ client sends
    assert "needs an AccessKey" in str(refusal(RULES, cpp_anonymous, HOME))
    assert "not an account" in str(refusal(RULES, send("stranger", "Orders", "whatever"), HOME))
    reason = refusal(RULES, send("producer1", "Orders", "wrong-secret"), HOME)
    assert reason is not None and "Signature" in reason and "producer1" in reason and "secret-p" not in reason


def test_pulls_and_offsets_need_sub_on_topic_and_group() -> None:
    pull = request(RequestCode.PULL_MESSAGE, "consumer1", topic="Orders", consumerGroup="billing")
    assert needed(pull) == [("%RETRY%billing", Perm.SUB), ("Orders", Perm.SUB)]
    assert refusal(RULES, pull, HOME) is None
    other_group = request(RequestCode.PULL_MESSAGE, "consumer1", topic="Orders", consumerGroup="ops")
    assert "no SUB permission on group:ops" in str(refusal(RULES, other_group, HOME))
    secret = request(RequestCode.UPDATE_CONSUMER_OFFSET, "consumer1", topic="Secret", consumerGroup="billing")
    assert "topic:Secret" in str(refusal(RULES, secret, HOME))
    query = request(RequestCode.QUERY_CONSUMER_OFFSET, "producer1", topic="Orders", consumerGroup="billing")
    assert "SUB permission on group:billing" in str(refusal(RULES, query, HOME))  # stricter than RocketMQ


def test_retry_topics_are_their_groups() -> None:
    back_to_retry = send("consumer1", "%RETRY%billing")  # a consumer's fallback send of a failed message
    assert needed(back_to_retry) == [("%RETRY%billing", Perm.SUB)]
    assert refusal(RULES, back_to_retry, HOME) is None
    assert "group:ops" in str(refusal(RULES, send("consumer1", "%RETRY%ops"), HOME))
    send_back = request(RequestCode.CONSUMER_SEND_MSG_BACK, "consumer1", group="billing", offset="7")
    assert refusal(RULES, send_back, HOME) is None


def test_heartbeats_need_sub_on_each_group_and_subscription() -> None:
    def heartbeat(*topics: str) -> bytes:
        subscriptions = [SubscriptionData(topic=topic, sub_string="*") for topic in topics]
        consumer = ConsumerData(
            group_name="billing",
            consume_type=ConsumeType.CONSUME_PASSIVELY,
            message_model=MessageModel.CLUSTERING,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
            subscription_data_set=subscriptions,
        )
        return HeartbeatData(client_id="c1", consumer_data_set=[consumer]).encode()

    allowed = request(RequestCode.HEART_BEAT, "consumer1", body=heartbeat("Orders", "%RETRY%billing"))
    assert refusal(RULES, allowed, HOME) is None
    refused = request(RequestCode.HEART_BEAT, "consumer1", body=heartbeat("Orders", "Secret"))
    assert "topic:Secret" in str(refusal(RULES, refused, HOME))
    garbled = request(RequestCode.HEART_BEAT, "consumer1", body=b"{not json")
    assert "cannot tell what HEART_BEAT" in str(refusal(RULES, garbled, HOME))


@pytest.mark.parametrize(
    "code",
    [
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,  # stricter than RocketMQ
    ],
)
def test_admin_codes_need_an_admin_account(code: int) -> None:
    reason = refusal(RULES, request(code, "producer1", topic="Orders"), HOME)
    assert reason is not None and "needs an admin account" in reason
    assert refusal(RULES, request(code, "operator", "secret-o", topic="Orders"), HOME) is None


def test_admins_with_resource_rules_are_held_to_them() -> None:
    assert refusal(RULES, send("operator", "Anything", "secret-o"), HOME) is None  # no rules: everything
    assert "topic:Orders" in str(refusal(RULES, send("limited-admin", "Orders", "secret-l"), HOME))


def test_any_account_may_ask_what_needs_no_resource() -> None:
    stats = request(RequestCode.GET_BROKER_RUNTIME_INFO, "producer1")
    assert refusal(RULES, stats, HOME) is None


def test_white_addresses() -> None:
    anonymous = request(RequestCode.DELETE_TOPIC_IN_BROKER, None, topic="Orders")
    assert refusal(RULES, anonymous, parse_host("10.0.0.9")) is None  # global: no account needed at all
    assert refusal(RULES, anonymous, parse_host("10.0.1.9")) is not None
    # an account's own white address spares the signature, not its permissions (stricter than RocketMQ)
    unsigned = RemotingCommand(
        code=RequestCode.PULL_MESSAGE,
        ext_fields={"AccessKey": "consumer1", "topic": "Orders", "consumerGroup": "billing"},
    )
    assert refusal(RULES, unsigned, parse_host("192.168.7.2")) is None
    assert "Signature" in str(refusal(RULES, unsigned, parse_host("192.168.7.3")))
    unsigned.ext_fields["topic"] = "Secret"
    assert "topic:Secret" in str(refusal(RULES, unsigned, parse_host("192.168.7.2")))


def test_trace_topic_needs_only_a_signature() -> None:
    assert refusal(RULES, send("consumer1", "RMQ_SYS_TRACE_TOPIC"), HOME) is None


def test_a_peer_kept_across_requests_still_checks_each_signature_and_permission() -> None:
    peer = PeerAccess(HOME)  # what a broker keeps per connection
    assert peer.refusal(RULES, send("producer1", "Orders")) is None
    assert peer.refusal(RULES, send("producer1", "Orders")) is None  # now from what it kept
    assert "does not match" in str(peer.refusal(RULES, send("producer1", "Orders", "wrong-secret")))
    tampered = send("producer1", "Orders")
    tampered.body = b"other body"
    assert "does not match" in str(peer.refusal(RULES, tampered))
    assert "needs an AccessKey" in str(peer.refusal(RULES, send(None, "Orders")))
    assert "topic:Secret" in str(peer.refusal(RULES, send("producer1", "Secret")))
    # the same connection signing for another account gets that account's permissions
    assert "topic:Orders" in str(peer.refusal(RULES, send("consumer1", "Orders")))
    assert "not an account" in str(peer.refusal(RULES, send("stranger", "Orders", "whatever")))
    assert peer.refusal(RULES, send("producer1", "Orders")) is None


def test_a_peer_kept_across_requests_checks_each_topic_it_sends_to() -> None:
    peer = PeerAccess(HOME)
    for _ in range(2):  # the second time from what the peer kept
        assert peer.refusal(RULES, send("producer1", "Orders")) is None
        assert "topic:Secret" in str(peer.refusal(RULES, send("producer1", "Secret")))
        assert peer.refusal(RULES, send("producer1", "Audit")) is None
        assert "topic:Logs" in str(peer.refusal(RULES, send("producer1", "Logs")))
        assert "topic:Logs" in str(peer.refusal(RULES, send("producer1", "Logs")))  # twice in a row
    # another send code naming the same topic in another field is checked on its own
    assert peer.refusal(RULES, request(RequestCode.SEND_MESSAGE, "producer1", body=b"x", topic="Orders")) is None
    assert "topic:Secret" in str(peer.refusal(RULES, request(RequestCode.SEND_MESSAGE, "producer1", topic="Secret")))


def test_a_peer_kept_across_requests_follows_new_rules() -> None:
    peer = PeerAccess(parse_host("192.168.7.1"))
    unsigned_by_white = request(RequestCode.PULL_MESSAGE, None, topic="Orders", consumerGroup="billing")
    unsigned_by_white.ext_fields["AccessKey"] = "consumer1"  # a white address of consumer1 need not sign
    assert peer.refusal(RULES, unsigned_by_white) is None
    assert peer.refusal(RULES, send("producer1", "Orders")) is None
    stricter = parse_acl_yaml(
        """
accounts:
  - accessKey: producer1
    secretKey: secret-p
    topicPerms: [Orders=SUB]
  - accessKey: consumer1
    secretKey: secret-c
"""
    )
    assert "no PUB permission on topic:Orders" in str(peer.refusal(stricter, send("producer1", "Orders")))
    assert "does not match" in str(peer.refusal(stricter, unsigned_by_white))  # no longer white
    assert peer.refusal(RULES, send("producer1", "Orders")) is None
    white = PeerAccess(parse_host("10.0.0.9"))
    assert white.refusal(RULES, send(None, "Secret")) is None  # globalWhiteRemoteAddresses
    assert "needs an AccessKey" in str(white.refusal(stricter, send(None, "Secret")))
