"""``encode_batch`` writes the batch body into one buffer: the bytes are those of the layout written
field by field with ``struct`` (the encoder it replaced, kept here as the reference), for any items."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol import BatchItem, LocalProtocolError, decode_batch, encode_batch


def reference_encoding(items: list[BatchItem]) -> bytes:
    """The batch body as the layout table in ``rocketq.protocol.batch`` reads, one ``struct`` call per field."""
    parts: list[bytes] = []
    for item in items:
        properties = item.properties.encode()
        total = 4 * 5 + len(item.body) + 2 + len(properties)
        parts.append(struct.pack(">iiiii", total, 0, 0, item.flag, len(item.body)))
        parts.append(item.body)
        parts.append(struct.pack(">h", len(properties)))
        parts.append(properties)
    return b"".join(parts)


items_strategy = st.lists(
    st.builds(
        BatchItem,
        st.binary(max_size=300),
        st.text(max_size=80),
        st.integers(min_value=-(2**31), max_value=2**31 - 1),
    ),
    max_size=20,
)


@given(items_strategy)
def test_the_one_buffer_encoding_equals_the_field_by_field_one(items: list[BatchItem]) -> None:
    body = encode_batch(items)
    assert body == reference_encoding(items)
    assert decode_batch(body) == items


def test_properties_too_long_for_their_int16_length_are_refused() -> None:
    encode_batch([BatchItem(b"x", "p" * 0x7FFF)])  # the largest that fits
    with pytest.raises(LocalProtocolError, match="32768 bytes exceed 32767"):
        encode_batch([BatchItem(b"x", "p" * 0x8000)])
