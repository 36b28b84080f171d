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

import binascii
import hashlib
import hmac
from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any, Final

from rocketq.protocol import RemotingCommand
from rocketq.protocol.command import Body

ACCESS_KEY: Final = "AccessKey"
SIGNATURE: Final = "Signature"
SECURITY_TOKEN: Final = "SecurityToken"
UNIQUE_KEY_QUERY: Final = "_UNIQUE_KEY_QUERY"
"""Added to QUERY_MESSAGE by the Java client after its hook signed the request (before 4.9.4)."""

_UNSIGNED: Final = frozenset({SIGNATURE, UNIQUE_KEY_QUERY})
_SIGNATURE_ONLY: Final = frozenset({SIGNATURE})
_BLOCK: Final = 64  # SHA-1's block size, which HMAC pads the key to
_INNER_PAD: Final = bytes(byte ^ 0x36 for byte in range(256))  # translation tables: key byte -> padded
_OUTER_PAD: Final = bytes(byte ^ 0x5C for byte in range(256))

_Picker = Callable[[Mapping[str, str]], Any]
"""Takes the signed values out of an ext-field map, in the order they are signed."""
_PICKERS: Final[dict[tuple[str, ...], _Picker]] = {}
"""The picker for each sequence of ext-field names seen (with the default ``skip``): a client sends
each kind of request with the same names in the same order, so the names are sorted once per kind."""
_PICKERS_MAX: Final = 256
"""Forgotten all at once beyond this many (peers sending ever new names cannot grow it for ever)."""


class SigningKey:
    """A secret key made ready for HMAC-SHA1 (RFC 2104): the hash states after the padded key are
    kept, so each signature costs two SHA-1 copies and the data. (OpenSSL 3's one-shot HMAC looks
    the algorithm up on every call, two to three times as slow for a request.)"""

    __slots__ = ("_inner", "_outer")

    def __init__(self, secret_key: str) -> None:
        key = secret_key.encode()
        if len(key) > _BLOCK:
            key = hashlib.sha1(key).digest()
        key = key.ljust(_BLOCK, b"\0")
        self._inner = hashlib.sha1(key.translate(_INNER_PAD))
        self._outer = hashlib.sha1(key.translate(_OUTER_PAD))

    def digest(self, fields: Mapping[str, str], body: Body, skip: frozenset[str] = _UNSIGNED) -> bytes:
        """The raw HMAC-SHA1 (20 bytes) of ``fields`` (minus ``skip``) then ``body``."""
        inner = self._inner.copy()
        inner.update(signed_text(fields, skip))
        inner.update(body)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()

    def signature(self, fields: Mapping[str, str], body: Body, skip: frozenset[str] = _UNSIGNED) -> str:
        """The base64 HMAC-SHA1 of ``fields`` (minus ``skip``) then ``body``."""
        return binascii.b2a_base64(self.digest(fields, body, skip), newline=False).decode()


class Credentials:
    """An account's keys, as ``plain_acl.yml`` lists them (the secret made ready to sign with)."""

    __slots__ = ("access_key", "key", "secret_key")

    def __init__(self, access_key: str, secret_key: str) -> None:
        self.access_key = access_key
        self.secret_key = secret_key
        self.key = SigningKey(secret_key)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Credentials):
            return NotImplemented
        return (self.access_key, self.secret_key) == (other.access_key, other.secret_key)

    def __hash__(self) -> int:
        return hash((self.access_key, self.secret_key))

    def __repr__(self) -> str:  # never print the secret
        return f"Credentials(access_key={self.access_key!r}, secret_key=<hidden>)"


def signed_text(fields: Mapping[str, str], skip: frozenset[str] = _UNSIGNED) -> bytes:
    """The ext-field part of what is signed: the values in the order of their names, minus ``skip``."""
    if skip is not _UNSIGNED:
        return "".join([fields[name] for name in sorted(fields) if name not in skip]).encode()
    names = tuple(fields)
    pick = _PICKERS.get(names)
    if pick is None:
        if len(_PICKERS) >= _PICKERS_MAX:
            _PICKERS.clear()
        pick = _PICKERS[names] = _picker(sorted(name for name in names if name not in skip))
    return "".join(pick(fields)).encode()


def _picker(names: list[str]) -> _Picker:
    if len(names) >= 2:
        return itemgetter(*names)  # a tuple of the values, taken in C
    if names:
        only = names[0]
        return lambda fields: (fields[only],)
    return lambda fields: ()


def signature(secret_key: str, fields: Mapping[str, str], body: Body, skip: frozenset[str] = _UNSIGNED) -> str:
    """The base64 HMAC-SHA1 of ``fields`` (minus ``skip``) then ``body``, keyed with ``secret_key``."""
    return SigningKey(secret_key).signature(fields, body, skip)


def sign(request: RemotingCommand, credentials: Credentials) -> None:
    """Add ``AccessKey`` and ``Signature`` to ``request`` (a new ext-field dict: the old one may be shared).
    Signing again (a retried request) gives the same signature."""
    fields = dict(request.ext_fields)
    fields[ACCESS_KEY] = credentials.access_key
    fields[SIGNATURE] = credentials.key.signature(fields, request.body)
    request.ext_fields = fields


def verify(key: SigningKey, fields: Mapping[str, str], body: Body) -> bool:
    """True when ``fields[Signature]`` signs ``fields`` and ``body`` with ``key``.

    The claimed signature is decoded (strict base64: only the alphabet, its padding, nothing after)
    and compared with the HMAC as raw bytes, in constant time."""
    claimed_text = fields.get(SIGNATURE)
    if claimed_text is None:
        return False
    try:
        claimed = binascii.a2b_base64(claimed_text, strict_mode=True)
    except ValueError:  # not base64 (binascii.Error), or not ASCII: no HMAC encodes to it
        return False
    if hmac.compare_digest(key.digest(fields, body), claimed):
        return True
    if UNIQUE_KEY_QUERY in fields:  # a Java client of 4.9.4 or later signed it as a field
        return hmac.compare_digest(key.digest(fields, body, _SIGNATURE_ONLY), claimed)
    return False
