"""Access control compatible with RocketMQ 4.x's ``plain_acl.yml`` (``aclEnable=true`` on a broker).

Pure logic only (it reads no file and opens no socket): ``signing`` (how requests are signed and
checked), ``addresses`` (remote-address patterns), ``rules`` (the yml file's accounts and
permissions) and ``access`` (what each request needs, and the decision). The broker applies it in
``rocketq.broker.acl``; clients sign in ``rocketq.remoting.RemotingClient`` given ``Credentials``.
"""

from rocketq.acl.access import ADMIN_CODES, PeerAccess, needed, refusal
from rocketq.acl.addresses import AclConfigError, AddressPattern, Host, parse_address_pattern, parse_host
from rocketq.acl.rules import Account, AclRules, Perm, parse_acl_yaml, permits
from rocketq.acl.signing import ACCESS_KEY, SIGNATURE, Credentials, SigningKey, sign, signature, verify

__all__ = [
    "ACCESS_KEY",
    "ADMIN_CODES",
    "SIGNATURE",
    "Account",
    "AclConfigError",
    "AclRules",
    "AddressPattern",
    "Credentials",
    "Host",
    "PeerAccess",
    "Perm",
    "SigningKey",
    "needed",
    "parse_acl_yaml",
    "parse_address_pattern",
    "parse_host",
    "permits",
    "refusal",
    "sign",
    "signature",
    "verify",
]
