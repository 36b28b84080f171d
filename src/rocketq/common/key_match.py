"""Which stored messages a query by key asks for.

An IndexFile finds candidates by the hash of ``topic#key`` only, so a lookup also returns messages whose
key merely hashes the same (Java ``String.hashCode``: "Aa" and "BB" collide, as does any key built from
such pairs). A query keeps a candidate only when the key is really one of the message's: its UNIQ_KEY
for a unique-key query, one of its space-separated KEYS for a plain one. The broker applies this rule
before counting a query's results, and the client applies it again to whatever a broker returns (a
RocketMQ broker returns collisions too).
"""

from __future__ import annotations

from rocketq.common.message import KEY_SEPARATOR, Property, find_property


def key_matches(properties_text: str, key: str, unique: bool | None) -> bool:
    """Whether a message with these (encoded) properties holds ``key``: as its UNIQ_KEY when ``unique``,
    among its KEYS when not, either way when ``unique`` is None (what the index holds)."""
    if unique is not False and find_property(properties_text, Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) == key:
        return True
    if unique is True:
        return False
    keys = find_property(properties_text, Property.KEYS)
    return keys is not None and key in keys.split(KEY_SEPARATOR)
