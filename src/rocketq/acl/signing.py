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

The HMAC itself: a ``SigningKey`` keeps, per secret, a ``KeyState`` holding the two SHA-1 states after
the padded key. In a compiled build that is ``NativeKey`` (``rocketq/acl/_hmac_sha1.c``): a request's
whole signature (``KeyState.sign``: the order of the names, the values, the body and both hashes) and
its whole check (``KeyState.verify``: the claimed signature decoded and compared too) are each one C call
over OpenSSL's SHA-1. Elsewhere it is ``HashlibKey``, the same over ``hashlib`` and ``binascii``.
``tests/acl/test_signing.py`` holds the two equal, and both to the standard library's ``hmac``.
"""

from __future__ import annotations

import binascii
import hashlib
import hmac
from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any, Final, Protocol

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

_ORDERS: Final[dict[tuple[str, ...], tuple[str, ...]]] = {}
"""The signed names in the order they are signed, for each sequence of ext-field names seen (with the
default ``skip``): a client sends each kind of request with the same names in the same order, so the
names are sorted once per kind."""
_ORDERS_MAX: Final = 256
"""Forgotten all at once beyond this many (peers sending ever new names cannot grow it for ever)."""

_Picker = Callable[[Mapping[str, str]], Any]
"""Takes the signed values out of an ext-field map, in the order they are signed (``HashlibKey``)."""
_PICKERS: Final[dict[tuple[str, ...], _Picker]] = {}
"""The picker for each order of names ``HashlibKey`` signed: an ``itemgetter`` takes the values in C,
twice as fast as a Python loop over the names when interpreted."""


class KeyState(Protocol):
    """A secret key made ready for HMAC-SHA1, and the HMAC of a request: ``HashlibKey`` or, in a
    compiled build, ``NativeKey`` (the same results, proven by ``tests/acl/test_signing.py``)."""

    def digest(self, fields: Mapping[str, str], names: tuple[str, ...], body: Body, /) -> bytes:
        """The raw HMAC-SHA1 of ``fields[name]`` for each of ``names`` (UTF-8, no separators), then ``body``."""
        ...

    def signature(self, fields: Mapping[str, str], names: tuple[str, ...], body: Body, /) -> str:
        """The base64 text of ``digest``."""
        ...

    def sign(self, fields: Mapping[str, str], body: Body, /) -> str:
        """A request's ``Signature``: the base64 HMAC-SHA1 of the values of ``fields`` in the order of their
        names, all but ``Signature`` and ``_UNIQUE_KEY_QUERY``, then ``body``."""
        ...

    def verify(self, fields: Mapping[str, str], body: Body, /) -> bool:
        """True when ``fields[Signature]`` signs ``fields`` and ``body`` (see ``verify``)."""
        ...


class HashlibKey:
    """``KeyState`` over ``hashlib``: the hash states after the padded key (RFC 2104) are kept, so each
    signature costs two SHA-1 copies and the data. (OpenSSL 3's one-shot HMAC looks the algorithm up on
    every call, two to three times as slow for a request.) What rocketq uses without a compiled build."""

    __slots__ = ("_inner", "_outer")

    def __init__(self, secret: bytes) -> None:
        if len(secret) > _BLOCK:
            secret = hashlib.sha1(secret).digest()
        secret = secret.ljust(_BLOCK, b"\0")
        self._inner = hashlib.sha1(secret.translate(_INNER_PAD))
        self._outer = hashlib.sha1(secret.translate(_OUTER_PAD))

    def digest(self, fields: Mapping[str, str], names: tuple[str, ...], body: Body, /) -> bytes:
        """The raw HMAC-SHA1 of ``fields[name]`` for each of ``names`` (UTF-8, no separators), then ``body``."""
        inner = self._inner.copy()
        inner.update("".join(_picker(names)(fields)).encode())
        inner.update(body)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()

    def signature(self, fields: Mapping[str, str], names: tuple[str, ...], body: Body, /) -> str:
        """The base64 text of ``digest``."""
        return binascii.b2a_base64(self.digest(fields, names, body), newline=False).decode()

    def sign(self, fields: Mapping[str, str], body: Body, /) -> str:
        """A request's ``Signature`` (see ``KeyState.sign``)."""
        return self.signature(fields, signed_names(fields), body)

    def verify(self, fields: Mapping[str, str], body: Body, /) -> bool:
        """True when ``fields[Signature]`` signs ``fields`` and ``body`` (see ``verify``)."""
        claimed_text = fields.get(SIGNATURE)
        if claimed_text is None:
            return False
        if not isinstance(claimed_text, str):
            raise TypeError(f"ext field 'Signature' is {type(claimed_text).__name__}, not text")
        try:
            claimed = binascii.a2b_base64(claimed_text, strict_mode=True)
        except ValueError:  # not base64 (binascii.Error), or not ASCII: no HMAC encodes to it
            return False
        if hmac.compare_digest(self.digest(fields, signed_names(fields), body), claimed):
            return True
        if UNIQUE_KEY_QUERY in fields:  # a Java client of 4.9.4 or later signed it as a field
            return hmac.compare_digest(self.digest(fields, signed_names(fields, _SIGNATURE_ONLY), body), claimed)
        return False


def _picker(names: tuple[str, ...]) -> _Picker:
    pick = _PICKERS.get(names)
    if pick is None:
        if len(_PICKERS) >= _ORDERS_MAX:
            _PICKERS.clear()
        if len(names) >= 2:
            pick = itemgetter(*names)  # a tuple of the values
        elif names:
            only = names[0]
            pick = lambda fields: (fields[only],)  # noqa: E731
        else:
            pick = lambda fields: ()  # noqa: E731
        _PICKERS[names] = pick
    return pick


def _native_key() -> Callable[[bytes], KeyState] | None:
    try:  # a C extension, built by rocketq.native.build and loaded with the compiled modules
        from rocketq.acl._hmac_sha1 import Key
    except ImportError:  # ROCKETQ_NATIVE=off, no build, or a build on a machine without OpenSSL's headers
        return None
    return Key


NativeKey: Final = _native_key()
"""``KeyState`` in one C call per signature (``rocketq/acl/_hmac_sha1.c``: OpenSSL's SHA-1 on two
prepared states, no Python call per piece and no allocation but the result), or None where it is not
loaded; then ``HashlibKey`` signs."""

KEY_STATE: Final[Callable[[bytes], KeyState]] = HashlibKey if NativeKey is None else NativeKey
"""What ``SigningKey`` makes its key state with: ``NativeKey`` where loaded, else ``HashlibKey``."""


class SigningKey:
    """A secret key made ready to sign and check requests (its ``KeyState``, made once per secret)."""

    __slots__ = ("_state",)

    def __init__(self, secret_key: str) -> None:
        self._state = KEY_STATE(secret_key.encode())

    def digest(self, fields: Mapping[str, str], body: Body, skip: frozenset[str] = _UNSIGNED) -> bytes:
        """The raw HMAC-SHA1 (20 bytes) of ``fields`` (minus ``skip``) then ``body``."""
        return self._state.digest(fields, signed_names(fields, skip), body)

    def signature(self, fields: Mapping[str, str], body: Body, skip: frozenset[str] = _UNSIGNED) -> str:
        """The base64 HMAC-SHA1 of ``fields`` (minus ``skip``) then ``body``."""
        if skip is _UNSIGNED:
            return self._state.sign(fields, body)
        return self._state.signature(fields, signed_names(fields, skip), body)

    def verify(self, fields: Mapping[str, str], body: Body) -> bool:
        """True when ``fields[Signature]`` signs ``fields`` and ``body`` with this key (see ``verify``)."""
        return self._state.verify(fields, body)


class Credentials:
    """An account's keys, as ``plain_acl.yml`` lists them (the secret made ready to sign with)."""

    __slots__ = ("access_key", "key", "secret_key")

    def __init__(self, access_key: str, secret_key: str) -> None:
        self.access_key = access_key
        self.secret_key = secret_key
        self.key = SigningKey(secret_key)

    def sign(self, request: RemotingCommand) -> None:
        """Add ``AccessKey`` and ``Signature`` to ``request`` (see ``sign``)."""
        fields = dict(request.ext_fields)
        fields[ACCESS_KEY] = self.access_key
        fields[SIGNATURE] = self.key.signature(fields, request.body)
        request.ext_fields = fields
        request.encoded_header = None  # (a header written from a template lacks the two fields)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Credentials):
            return NotImplemented
        return (self.access_key, self.secret_key) == (other.access_key, other.secret_key)

    def __hash__(self) -> int:
        return hash((self.access_key, self.secret_key))

    def __repr__(self) -> str:  # never print the secret
        return f"Credentials(access_key={self.access_key!r}, secret_key=<hidden>)"


def signed_names(fields: Mapping[str, str], skip: frozenset[str] = _UNSIGNED) -> tuple[str, ...]:
    """The names of the signed ext fields, in the order their values are signed: all but ``skip``, sorted."""
    if skip is not _UNSIGNED:
        return tuple(sorted([name for name in fields if name not in skip]))
    names = tuple(fields)
    order = _ORDERS.get(names)
    if order is None:
        if len(_ORDERS) >= _ORDERS_MAX:
            _ORDERS.clear()
        order = _ORDERS[names] = tuple(sorted([name for name in names if name not in skip]))
    return order


def signed_text(fields: Mapping[str, str], skip: frozenset[str] = _UNSIGNED) -> bytes:
    """The ext-field part of what is signed: the values in the order of their names, minus ``skip``."""
    return "".join([fields[name] for name in signed_names(fields, skip)]).encode()


def signature(secret_key: str, fields: Mapping[str, str], body: Body, skip: frozenset[str] = _UNSIGNED) -> str:
    """The base64 HMAC-SHA1 of ``fields`` (minus ``skip``) then ``body``, keyed with ``secret_key``."""
    return SigningKey(secret_key).signature(fields, body, skip)


def sign(request: RemotingCommand, credentials: Credentials) -> None:
    """Add ``AccessKey`` and ``Signature`` to ``request`` (a new ext-field dict: the old one may be shared).
    Signing again (a retried request) gives the same signature."""
    credentials.sign(request)


def verify(key: SigningKey, fields: Mapping[str, str], body: Body) -> bool:
    """True when ``fields[Signature]`` signs ``fields`` and ``body`` with ``key``.

    The claimed signature is decoded (strict base64: only the alphabet, its padding, nothing after)
    and compared with the HMAC as raw bytes, in constant time. When they differ and the request has
    ``_UNIQUE_KEY_QUERY``, the HMAC with that field signed is compared too. A ``Signature`` that is not
    text is a TypeError."""
    return key.verify(fields, body)
