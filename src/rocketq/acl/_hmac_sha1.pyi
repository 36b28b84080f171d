"""Types of the C extension ``rocketq/acl/_hmac_sha1.c`` (``rocketq.acl.signing.NativeKey``)."""

from collections.abc import Mapping

from rocketq.protocol.command import Body

class Key:
    """A secret key made ready for HMAC-SHA1: the hash states after the padded key."""

    def __init__(self, secret: bytes) -> None: ...
    def digest(self, fields: Mapping[str, str], names: tuple[str, ...], body: Body, /) -> bytes:
        """The raw HMAC-SHA1 of ``fields[name]`` for each of ``names`` (UTF-8, no separators), then ``body``."""
    def signature(self, fields: Mapping[str, str], names: tuple[str, ...], body: Body, /) -> str:
        """The base64 text of ``digest``."""
    def sign(self, fields: Mapping[str, str], body: Body, /) -> str:
        """The base64 HMAC-SHA1 of the values of ``fields`` in the order of their names, all but
        ``Signature`` and ``_UNIQUE_KEY_QUERY``, then of ``body``: a request's ``Signature``."""
    def verify(self, fields: Mapping[str, str], body: Body, /) -> bool:
        """True when ``fields['Signature']`` (strict base64) is ``sign(fields, body)``, or, when ``fields``
        has ``_UNIQUE_KEY_QUERY``, the same with that field signed; compared in constant time."""
