"""Topic names and properties: what may travel (``rocketq.common.names``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client import ConsumerConfig, Producer, ProducerConfig
from rocketq.common.message import decode_properties, encode_properties
from rocketq.common.names import empty_property_problem, group_name_problem, separator_problem, topic_name_problem

texts = st.text(alphabet=st.sampled_from("ab\x01\x02 é"), min_size=1, max_size=5)


@given(st.dictionaries(texts, texts, max_size=5))
def test_separator_counting_flags_exactly_the_properties_that_would_be_cut_apart(properties: dict[str, str]) -> None:
    text = encode_properties(properties)
    has_separator = any(c in "\x01\x02" for pair in properties.items() for part in pair for c in part)
    problem = separator_problem(properties, text)
    assert (problem is not None) == has_separator, (properties, problem)
    if problem is None:
        assert decode_properties(text) == properties  # what passes arrives intact


def test_empty_names_or_values_and_bad_topic_names_are_named() -> None:
    assert empty_property_problem({"a": "1"}) is None
    assert "empty" in (empty_property_problem({"a": ""}) or "")
    assert topic_name_problem("%RETRY%group-1_a|b") is None
    assert "characters outside" in (topic_name_problem("a.b") or "")
    assert "characters outside" in (topic_name_problem("TopicFine\n") or "")  # a final newline too
    assert "characters outside" in (group_name_problem("group\n") or "")
    assert "longer than 127" in (topic_name_problem("t" * 128) or "")
    assert topic_name_problem("t" * 127) is None
    assert "empty" in (topic_name_problem("") or "")


@pytest.mark.parametrize(("group", "problem"), [("", "empty"), ("my group", "characters outside"), ("g" * 256, "255")])
def test_client_configs_refuse_bad_group_names(group: str, problem: str) -> None:
    assert problem in (group_name_problem(group) or "")
    with pytest.raises(ValueError, match=problem):
        ConsumerConfig(group=group)
    with pytest.raises(ValueError, match=problem):
        ProducerConfig(group=group)
    with pytest.raises(ValueError, match=problem):
        Producer(group=group)
    assert ConsumerConfig(group="g" * 255).group == "g" * 255
