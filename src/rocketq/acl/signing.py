"""Request signatures as RocketMQ 4.x clients make them and its brokers check them.

A signed request carries its account's access key in the ``AccessKey`` ext field and, in ``Signature``,
the base64 of an HMAC-SHA1 keyed with the account's secret key over:

* the values of every other ext field, in the order of their names (byte order, as Java's ``TreeMap``
  and C++'s ``std::map`` sort ASCII names), concatenated as UTF-8 text without separators, then
* the body, as it travels.

``AccessKey`` (and ``SecurityToken`` when a client sends one) are among the signed fields; ``Signature``
is not. Brokers also leave out ``_UNIQUE_KEY_QUERY``, which Java clients before 4.9.4 added to a query
after signing it; later Java clients sign it like any field, so a check accepts either (``verify``).
The C++ client signs an ``OnsChannel`` field too (``"ALIYUN"``), which it sends, so nothing special
follows from it. Its requests carry a signature even without credentials: an empty ``AccessKey`` and
an HMAC keyed with the empty string.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from rocketq.protocol import RemotingCommand
from rocketq.protocol.command import Body

ACCESS_KEY: Final = "AccessKey"
SIGNATURE: Final = "Signature"
SECURITY_TOKEN: Final = "SecurityToken"
UNIQUE_KEY_QUERY: Final = "_UNIQUE_KEY_QUERY"
"""Added to QUERY_MESSAGE by the Java client after its hook signed the request (before 4.9.4)."""

_UNSIGNED: Final = frozenset({SIGNATURE, UNIQUE_KEY_QUERY})
_ONE_SHOT_MAX: Final = 64 * 1024  # bodies up to this are joined to the fields and hashed in one call


@dataclass(frozen=True, slots=True)
class Credentials:
    """An account's keys, as ``plain_acl.yml`` lists them."""

    access_key: str
    secret_key: str

    def __repr__(self) -> str:  # never print the secret
        return f"Credentials(access_key={self.access_key!r}, secret_key=<hidden>)"


def signed_text(fields: Mapping[str, str], *, skip: frozenset[str] = _UNSIGNED) -> bytes:
    """The ext-field part of what is signed: the values in the order of their names, minus ``skip``."""
    return "".join([fields[name] for name in sorted(fields) if name not in skip]).encode()


def signature(secret_key: str, fields: Mapping[str, str], body: Body, *, skip: frozenset[str] = _UNSIGNED) -> str:
    """The base64 HMAC-SHA1 of ``fields`` (minus ``skip``) then ``body``, keyed with ``secret_key``."""
    head = signed_text(fields, skip=skip)
    key = secret_key.encode()
    if len(body) <= _ONE_SHOT_MAX:  # (a digest named by text takes OpenSSL's one-shot path)
        digest = hmac.digest(key, head + body, "sha1")
    else:  # do not copy a large body to hash it
        mac = hmac.new(key, head, hashlib.sha1)
        mac.update(body)
        digest = mac.digest()
    return base64.b64encode(digest).decode()


def sign(request: RemotingCommand, credentials: Credentials) -> None:
    """Add ``AccessKey`` and ``Signature`` to ``request`` (a new ext-field dict: the old one may be shared).
    Signing again (a retried request) gives the same signature."""
    fields = dict(request.ext_fields)
    fields[ACCESS_KEY] = credentials.access_key
    fields[SIGNATURE] = signature(credentials.secret_key, fields, request.body)
    request.ext_fields = fields


def verify(secret_key: str, fields: Mapping[str, str], body: Body) -> bool:
    """True when ``fields[Signature]`` signs ``fields`` and ``body`` with ``secret_key``."""
    claimed = fields.get(SIGNATURE)
    if claimed is None:
        return False
    if hmac.compare_digest(signature(secret_key, fields, body), claimed):
        return True
    if UNIQUE_KEY_QUERY in fields:  # a Java client of 4.9.4 or later signed it as a field
        return hmac.compare_digest(signature(secret_key, fields, body, skip=frozenset({SIGNATURE})), claimed)
    return False
