"""The rules of a RocketMQ 4.x ``plain_acl.yml``, parsed and checked::

    globalWhiteRemoteAddresses:        # peers that need no account at all
      - 10.10.103.*
    accounts:
      - accessKey: RocketMQ            # 7 characters or more, as RocketMQ requires
        secretKey: 12345678            # 7 characters or more
        whiteRemoteAddress: 192.168.0.*  # peers that need not sign (their permissions still apply)
        admin: false                   # admin accounts may create and delete topics and groups
        defaultTopicPerm: DENY         # for topics not in topicPerms (absent: DENY)
        defaultGroupPerm: SUB          # for groups not in groupPerms (absent: DENY)
        topicPerms: [topicA=DENY, topicB=PUB|SUB, topicC=SUB]
        groupPerms: [groupA=DENY, groupB=PUB|SUB, groupC=SUB]

Permissions are ``DENY``, ``PUB``, ``SUB`` and ``PUB|SUB`` (or ``SUB|PUB``). A group's permission is
kept under its retry topic, ``%RETRY%<group>``, as RocketMQ keeps it: a request naming a retry topic is
checked against the group's. Where RocketMQ silently reads a mistake as DENY or skips it (an unknown
permission word, a duplicated access key, a key that is not text), this parser refuses the file and
says where: a broker then keeps the rules it had (``rocketq.broker.acl``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import yaml

from rocketq.acl.addresses import NO_ADDRESS, AclConfigError, AddressPattern, parse_address_pattern
from rocketq.acl.signing import SigningKey
from rocketq.common.group_topics import RETRY_PREFIX, retry_topic

KEY_MIN_LENGTH: Final = 7
"""RocketMQ refuses access and secret keys of 6 characters or fewer."""


class Perm:
    """Permission bits (plain ints: checked on every request), RocketMQ's values. ``ANY`` is only
    ever needed, never granted."""

    NONE: Final = 0
    DENY: Final = 1
    ANY: Final = 2
    PUB: Final = 4
    SUB: Final = 8


_PERM_WORDS: Final = {
    "DENY": Perm.DENY,
    "PUB": Perm.PUB,
    "SUB": Perm.SUB,
    "PUB|SUB": Perm.PUB | Perm.SUB,
    "SUB|PUB": Perm.PUB | Perm.SUB,
}


def parse_perm(text: str, where: str) -> int:
    perm = _PERM_WORDS.get(text.strip())
    if perm is None:
        raise AclConfigError(f"{where}: permission {text!r} is not DENY, PUB, SUB or PUB|SUB")
    return perm


def permits(needed: int, owned: int) -> bool:
    """Whether ``owned`` grants ``needed`` (RocketMQ's rule: DENY refuses everything)."""
    if owned & Perm.DENY:
        return False
    if needed & Perm.ANY:
        return owned & (Perm.PUB | Perm.SUB) != 0
    return needed & owned != 0


def is_group_resource(resource: str) -> bool:
    """Resources are topics, and groups under their retry topic's name."""
    return resource.startswith(RETRY_PREFIX)


def describe(resource: str) -> str:
    """``topic:T`` or ``group:G``, for messages."""
    if is_group_resource(resource):
        return f"group:{resource.removeprefix(RETRY_PREFIX)}"
    return f"topic:{resource}"


@dataclass(frozen=True, slots=True)
class Account:
    access_key: str
    secret_key: str
    white_address: AddressPattern = NO_ADDRESS
    admin: bool = False
    default_topic_perm: int = Perm.DENY
    default_group_perm: int = Perm.DENY
    resource_perms: Mapping[str, int] = field(default_factory=dict)  # topics, and groups as retry topics
    key: SigningKey = field(init=False, repr=False, compare=False)  # secret_key, ready to check signatures

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", SigningKey(self.secret_key))

    def __repr__(self) -> str:  # never print the secret
        return f"Account(access_key={self.access_key!r}, admin={self.admin})"

    def perm_of(self, resource: str) -> int:
        granted = self.resource_perms.get(resource)
        if granted is not None:
            return granted
        return self.default_group_perm if is_group_resource(resource) else self.default_topic_perm


@dataclass(frozen=True, slots=True)
class AclRules:
    accounts: Mapping[str, Account] = field(default_factory=dict)  # by access key
    global_white_addresses: tuple[AddressPattern, ...] = ()


def parse_acl_yaml(text: str, source: str = "plain_acl.yml") -> AclRules:
    """Parse a ``plain_acl.yml`` (``yaml.safe_load``: no tags, no objects).

    Raises:
        AclConfigError: The text is not YAML, or an entry is not as the module docstring shows,
            naming ``source`` and the entry.
    """
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise AclConfigError(f"{source} is not valid YAML: {exc}") from None
    if document is None:
        return AclRules()
    if not isinstance(document, dict):
        raise AclConfigError(f"{source}: expected a mapping at the top, found {type(document).__name__}")
    white = tuple(
        _pattern(item, f"{source}: globalWhiteRemoteAddresses[{index}]")
        for index, item in enumerate(_list(document.get("globalWhiteRemoteAddresses"), f"{source}: globalWhite"))
    )
    accounts: dict[str, Account] = {}
    for index, entry in enumerate(_list(document.get("accounts"), f"{source}: accounts")):
        account = _account(entry, f"{source}: accounts[{index}]")
        if account.access_key in accounts:
            raise AclConfigError(f"{source}: accounts[{index}]: accessKey {account.access_key!r} is listed twice")
        accounts[account.access_key] = account
    return AclRules(accounts, white)


def _account(entry: object, where: str) -> Account:
    if not isinstance(entry, dict):
        raise AclConfigError(f"{where}: expected a mapping, found {type(entry).__name__}")
    access_key = _text(entry.get("accessKey"), f"{where}.accessKey")
    secret_key = _text(entry.get("secretKey"), f"{where}.secretKey")
    for name, value in (("accessKey", access_key), ("secretKey", secret_key)):
        if len(value) < KEY_MIN_LENGTH:
            raise AclConfigError(f"{where}.{name} must have at least {KEY_MIN_LENGTH} characters")
    where = f"{where} ({access_key})"
    perms: dict[str, int] = {}
    for kind in ("topicPerms", "groupPerms"):
        for index, item in enumerate(_list(entry.get(kind), f"{where}.{kind}")):
            place = f"{where}.{kind}[{index}]"
            name, equals, word = _text(item, place).partition("=")
            if not equals or not name.strip() or "=" in word:
                raise AclConfigError(f"{place}: expected name=PERM, found {item!r}")
            resource = name.strip() if kind == "topicPerms" else retry_topic(name.strip())
            perms[resource] = parse_perm(word, place)
    return Account(
        access_key=access_key,
        secret_key=secret_key,
        white_address=_pattern(entry.get("whiteRemoteAddress"), f"{where}.whiteRemoteAddress"),
        admin=_flag(entry.get("admin"), f"{where}.admin"),
        default_topic_perm=_default_perm(entry.get("defaultTopicPerm"), f"{where}.defaultTopicPerm"),
        default_group_perm=_default_perm(entry.get("defaultGroupPerm"), f"{where}.defaultGroupPerm"),
        resource_perms=perms,
    )


def _list(value: object, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise AclConfigError(f"{where}: expected a list, found {type(value).__name__}")
    return value


def _text(value: object, where: str) -> str:
    # YAML reads ``secretKey: 12345678`` as a number; RocketMQ's loader takes it as its text
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise AclConfigError(f"{where}: expected text, found {'nothing' if value is None else repr(value)}")
    return str(value).strip()


def _flag(value: object, where: str) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise AclConfigError(f"{where}: expected true or false, found {value!r}")


def _default_perm(value: object, where: str) -> int:
    return Perm.DENY if value is None else parse_perm(_text(value, where), where)


def _pattern(value: object, where: str) -> AddressPattern:
    if value is None:
        return NO_ADDRESS
    try:
        return parse_address_pattern(_text(value, where))
    except AclConfigError as exc:
        raise AclConfigError(f"{where}: {exc}") from None
