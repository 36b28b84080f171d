"""quote_object_keys: fastjson's maps keyed by objects, read as standard JSON."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.protocol.fastjson import quote_object_keys

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
queues = st.fixed_dictionaries({"brokerName": st.text(), "queueId": st.integers(0, 64), "topic": st.text()})


def fastjson_map(entries: list[tuple[dict[str, object], object]]) -> str:
    """A map keyed by objects, as fastjson writes one."""
    return "{" + ",".join(f"{json.dumps(key)}:{json.dumps(value)}" for key, value in entries) + "}"


@given(st.lists(st.tuples(queues, json_values), max_size=4), json_values)
def test_object_keys_become_string_keys_that_decode_to_the_objects(
    entries: list[tuple[dict[str, object], object]], other: object
) -> None:
    other_text = json.dumps(other)
    text = f'{{"before":{other_text},"offsetTable":{fastjson_map(entries)},"after":[{other_text}]}}'
    document = json.loads(quote_object_keys(text.encode()))
    assert document["before"] == other and document["after"] == [other]
    table = document["offsetTable"]
    unique = {json.dumps(key): value for key, value in entries}  # (a repeated key: the last one wins)
    assert table == unique
    assert [json.loads(key) for key in table] == [json.loads(key) for key in unique]


@given(json_values)
def test_standard_json_comes_back_unchanged(value: object) -> None:
    text = json.dumps(value).encode()
    assert quote_object_keys(text) == text


@pytest.mark.parametrize("text", [b'{"a":"unterminated', b'{{"a":1', b'{"t":{{"x":"}'])
def test_truncated_text_is_an_error(text: bytes) -> None:
    with pytest.raises(ValueError, match="unterminated"):
        quote_object_keys(text)
