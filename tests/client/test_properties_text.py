"""A message's properties text is written out directly by ``checked_text`` (its user properties, when
none is a name the client sets itself, then its own fields'); the text (or the refusal) is the one the
dictionary path gives: ``Message.wire_properties`` with the unique id added, encoded by
``properties_text``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.errors import ValidationError
from rocketq.client.message import Message
from rocketq.client.send_checks import checked_properties, checked_text, properties_text
from rocketq.common.message import Property, decode_properties

MAX_SIZE = 4 * 1024 * 1024
SEPARATOR_TEXT = st.text(alphabet=st.sampled_from(["a", "b", " ", "é", "\x01", "\x02"]), max_size=6)


def by_dictionary(message: Message, fresh_id: str) -> tuple[str, str] | str:
    """The text and unique id through the dictionary, or the refusal's message."""
    try:
        properties = checked_properties(message, MAX_SIZE, set())
        unique_id = properties.setdefault(Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, fresh_id)
        return properties_text(properties), unique_id
    except ValidationError as exc:
        return str(exc)


def written_out(message: Message, fresh_id: str) -> tuple[str, str] | str:
    try:
        return checked_text(message, MAX_SIZE, set(), fresh_id)
    except ValidationError as exc:
        return str(exc)


@given(
    tags=st.none() | SEPARATOR_TEXT,
    keys=st.none() | SEPARATOR_TEXT | st.lists(SEPARATOR_TEXT, max_size=3),
    delay_level=st.integers(min_value=-1, max_value=18),
    wait=st.booleans(),
    flag=st.integers(min_value=0, max_value=7),
    fresh_id=st.text(alphabet="0123456789ABCDEF", min_size=1, max_size=32) | SEPARATOR_TEXT,
    properties=st.dictionaries(
        SEPARATOR_TEXT | st.sampled_from(["TAGS", "KEYS", "DELAY", "WAIT", "UNIQ_KEY", "color"]),
        SEPARATOR_TEXT,
        max_size=3,
    ),
)
def test_the_written_out_text_is_the_dictionarys(
    tags: str | None,
    keys: str | list[str] | None,
    delay_level: int,
    wait: bool,
    flag: int,
    fresh_id: str,
    properties: dict[str, str],
) -> None:
    message = Message(
        "T",
        b"body",
        tags=tags,
        keys=keys,
        delay_level=delay_level,
        flag=flag,
        wait_store_msg_ok=wait,
        properties=properties,
    )
    assert written_out(message, fresh_id) == by_dictionary(message, fresh_id)


def test_user_properties_lead_the_written_out_text() -> None:
    message = Message("T", b"body", tags="TagA", properties={"benchSentNs": "12345", "color": "red"})
    text, unique_id = checked_text(message, MAX_SIZE, set(), "ID1")
    assert unique_id == "ID1"
    assert text == "benchSentNs\x0112345\x02color\x01red\x02TAGS\x01TagA\x02WAIT\x01true\x02UNIQ_KEY\x01ID1"


def test_a_plain_message_travels_with_wait_and_its_unique_id_last() -> None:
    message = Message("T", b"body", tags="TagA", keys=["k1", "k2"], delay_level=2)
    text, unique_id = checked_text(message, MAX_SIZE, set(), "ID1")
    assert unique_id == "ID1"
    assert decode_properties(text) == {"TAGS": "TagA", "KEYS": "k1 k2", "DELAY": "2", "WAIT": "true", "UNIQ_KEY": "ID1"}
    assert text.endswith("\x02UNIQ_KEY\x01ID1")


def test_user_properties_and_extra_ones_go_through_the_dictionary() -> None:
    message = Message("T", b"body", tags="TagA", properties={"UNIQ_KEY": "OWN", "color": "red"})
    text, unique_id = checked_text(message, MAX_SIZE, set(), "FRESH", {"TRAN_MSG": "true"})
    assert unique_id == "OWN"
    assert decode_properties(text) == {
        "UNIQ_KEY": "OWN",
        "color": "red",
        "TAGS": "TagA",
        "WAIT": "true",
        "TRAN_MSG": "true",
    }


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        (Message("T", b"body", tags="a\x01b"), "'TAGS' holds"),
        (Message("T", b"body", keys=[""]), "empty name or value"),
        (Message("T", b""), "body is empty"),
        (Message("bad topic!", b"body"), "topic"),
    ],
)
def test_what_cannot_travel_is_refused(message: Message, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        checked_text(message, MAX_SIZE, set(), "ID")
