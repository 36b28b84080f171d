"""plain_acl.yml as RocketMQ 4.x writes it, and the mistakes a broker refuses to load."""

from __future__ import annotations

import pytest

from rocketq.acl import AclConfigError, Perm, parse_acl_yaml, parse_host, permits

# The shape of the file RocketMQ ships in conf/: note the numeric secret keys and the empty address.
ROCKETMQ_STYLE = """
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      # a group's permission is kept under its retry topic
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
"""


def test_rocketmq_style_file() -> None:
    rules = parse_acl_yaml(ROCKETMQ_STYLE)
    assert [p.text for p in rules.global_white_addresses] == ["10.10.103.*", "192.168.0.*"]
    plain, admin = rules.accounts["RocketMQ"], rules.accounts["rocketmq2"]
    assert plain.secret_key == "12345678" and not plain.admin
    assert plain.perm_of("topicA") == Perm.DENY
    assert plain.perm_of("topicB") == Perm.PUB | Perm.SUB
    assert plain.perm_of("topicZ") == Perm.DENY  # defaultTopicPerm
    assert plain.perm_of("%RETRY%groupC") == Perm.SUB
    assert plain.perm_of("%RETRY%groupZ") == Perm.SUB  # defaultGroupPerm
    assert not plain.white_address.matches(parse_host("192.168.1.5"))
    assert admin.admin and admin.white_address.matches(parse_host("192.168.1.5"))
    assert admin.default_topic_perm == Perm.DENY  # absent: DENY, as in RocketMQ
    assert "12345678" not in repr(plain)


@pytest.mark.parametrize("text", ["", "# nothing yet\n", "accounts:\n"])
def test_an_empty_file_has_no_accounts(text: str) -> None:
    rules = parse_acl_yaml(text)
    assert not rules.accounts and not rules.global_white_addresses


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("accounts: [ {accessKey: short, secretKey: 12345678} ]", "accessKey must have at least 7"),
        ("accounts: [ {accessKey: account1, secretKey: 123456} ]", "secretKey must have at least 7"),
        ("accounts: [ {accessKey: account1} ]", "secretKey: expected text, found nothing"),
        ("accounts: [ {accessKey: account1, secretKey: secret-1, defaultTopicPerm: PUBSUB} ]", "'PUBSUB'"),
        ("accounts: [ {accessKey: account1, secretKey: secret-1, topicPerms: [topicA]} ]", "name=PERM"),
        ("accounts: [ {accessKey: account1, secretKey: secret-1, groupPerms: [g=SUB=PUB]} ]", "name=PERM"),
        ("accounts: [ {accessKey: account1, secretKey: secret-1, admin: maybe} ]", "true or false"),
        ("accounts: [ {accessKey: account1, secretKey: secret-1, whiteRemoteAddress: 300.1.1.1} ]", "300.1.1.1"),
        (
            "accounts: [ {accessKey: account1, secretKey: secret-1}, {accessKey: account1, secretKey: secret-2} ]",
            "listed twice",
        ),
        ("globalWhiteRemoteAddresses: [10.1.*.2]", "globalWhiteRemoteAddresses\\[0\\]"),
        ("accounts: {accessKey: account1}", "expected a list"),
        ("- just a list", "expected a mapping"),
        ("accounts: [ {accessKey: account1, secretKey: [1, 2]} ]", "expected text"),
        ("accounts: [ {accessKey: account1", "not valid YAML"),
    ],
)
def test_mistakes_are_errors_that_say_where(text: str, complaint: str) -> None:
    with pytest.raises(AclConfigError, match=complaint):
        parse_acl_yaml(text, "conf/plain_acl.yml")


def test_permission_rule() -> None:
    pub, sub, both, deny = Perm.PUB, Perm.SUB, Perm.PUB | Perm.SUB, Perm.DENY
    assert permits(pub, pub) and permits(pub, both) and not permits(pub, sub)
    assert permits(sub, sub) and permits(sub, both) and not permits(sub, pub)
    assert not permits(pub, deny) and not permits(sub, deny | both)  # DENY wins
    assert permits(Perm.ANY, pub) and permits(Perm.ANY, sub) and not permits(Perm.ANY, deny)
