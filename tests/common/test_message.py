from hypothesis import given
from hypothesis import strategies as st

from rocketq.common.message import (
    decode_properties,
    encode_properties,
    find_property,
    java_string_hash,
    tags_hash_code,
)
from rocketq.common.message_id import (
    decode_host,
    encode_host,
    joined_offset_message_ids,
    offset_message_id,
    parse_offset_message_id,
)


def test_java_hash_matches_known_values() -> None:
    assert tags_hash_code("TagA") == 2598919  # docs/store-format.md#tag-hash-code
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2147483648  # the famous Integer.MIN_VALUE string
    assert java_string_hash("é") == 233
    assert java_string_hash("😀") == (31 * 0xD83D + 0xDE00)  # surrogate pair: two UTF-16 units
    assert tags_hash_code(None) == 0


def test_properties_codec_accepts_java_and_cpp_forms() -> None:
    java = "TAGS\x01TagA\x02KEYS\x01k1 k2"
    cpp = java + "\x02"
    assert decode_properties(java) == decode_properties(cpp) == {"TAGS": "TagA", "KEYS": "k1 k2"}
    assert decode_properties("\x02\x02A\x01\x02\x01B\x02C\x01D") == {"C": "D"}
    assert encode_properties({"TAGS": "TagA", "EMPTY": "", "KEYS": "k"}) == "TAGS\x01TagA\x02KEYS\x01k"


@given(
    st.dictionaries(
        st.text(alphabet=st.characters(blacklist_characters="\x01\x02"), min_size=1),
        st.text(alphabet=st.characters(blacklist_characters="\x01\x02"), min_size=1),
    )
)
def test_properties_round_trip(properties: dict[str, str]) -> None:
    assert decode_properties(encode_properties(properties)) == properties


def test_offset_message_id_matches_the_documented_example() -> None:
    host = encode_host("127.0.0.1", 20911)
    assert offset_message_id(host, 0) == "7F000001000051AF0000000000000000"
    assert parse_offset_message_id("7F000001000051AF0000000000000000") == ("127.0.0.1", 20911, 0)
    assert decode_host(host) == ("127.0.0.1", 20911)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "XTAGS", "TAG", ""]),
            st.text(alphabet=st.sampled_from("ab\x01 TAGS"), max_size=5),
        ),
        max_size=6,
    ),
    st.booleans(),
)
def test_find_property_agrees_with_decode_properties(pairs: list[tuple[str, str]], trailing: bool) -> None:
    text = "\x02".join(f"{name}\x01{value}" for name, value in pairs) + ("\x02" if trailing else "")
    decoded = decode_properties(text)
    for name in ("TAGS", "KEYS", "UNIQ_KEY", "TAG"):
        assert find_property(text, name) == decoded.get(name), (text, name)


@given(
    st.ip_addresses(v=4).map(str),
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.lists(st.integers(min_value=0, max_value=2**63 - 1), max_size=300),
)
def test_joined_offset_message_ids_match_one_at_a_time(address: str, port: int, offsets: list[int]) -> None:
    host = encode_host(address, port)
    one_at_a_time = [offset_message_id(host, offset) for offset in offsets]
    joined = joined_offset_message_ids(host, offsets)
    assert joined == ",".join(one_at_a_time)
    assert (joined.split(",") if joined else []) == one_at_a_time  # (no id holds a comma: each splits apart)
    for one, offset in zip(one_at_a_time, offsets, strict=True):
        assert parse_offset_message_id(one) == (address, port, offset)


@given(st.ip_addresses(v=4).map(str), st.integers(-(2**31), 2**31 - 1), st.integers(0, 2**63 - 1))
def test_one_offset_id_is_the_packed_id(address: str, port: int, offset: int) -> None:
    """A single offset takes a format of its own: the same id as packing host and offset."""
    host = encode_host(address, port)
    assert joined_offset_message_ids(host, [offset]) == offset_message_id(host, offset)
    assert joined_offset_message_ids(host, [offset]) == (host + offset.to_bytes(8, "big")).hex().upper()


def horner(text: str) -> int:
    """Java's definition, unit by unit (the oracle for the summed form)."""
    raw = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(raw), 2):
        h = (31 * h + int.from_bytes(raw[i : i + 2], "big")) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


@given(st.text(max_size=40) | st.text(alphabet="ab😀", min_size=1000, max_size=1100))
def test_java_hash_matches_horners_rule_short_and_long(text: str) -> None:
    assert java_string_hash(text) == horner(text)
