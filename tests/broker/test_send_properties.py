"""The broker's fast path for a plain message's properties decodes to what the general path stores."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker.handlers.send import plain_stored_properties
from rocketq.broker.send_request import stored_properties_suffix
from rocketq.common.message import decode_properties

names = st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "WAIT", "a", "CLUSTERX", "DELAY", "MSG_REGION", "TRACE_ON", ""])
values = st.text(alphabet=st.sampled_from("ab1 \x01"), max_size=4)


@given(st.lists(st.tuples(names, values), max_size=6), st.sampled_from(["", "\x02", "\x02\x02"]))
def test_plain_path_matches_the_general_path(pairs: list[tuple[str, str]], tail: str) -> None:
    text = "\x02".join(f"{name}\x01{value}" for name, value in pairs) + tail
    stored = plain_stored_properties(text, stored_properties_suffix("DefaultCluster"))
    general = decode_properties(text)
    if stored is None:  # the general path handles it: a broker-set, delay or transaction property
        assert any(f"{name}\x01" in text for name in ("MSG_REGION", "TRACE_ON", "CLUSTER", "DELAY", "TRAN_MSG"))
        return
    general.setdefault("MSG_REGION", "DefaultRegion")
    general.setdefault("TRACE_ON", "true")
    general["CLUSTER"] = "DefaultCluster"
    assert decode_properties(stored) == general


def test_plain_path_appends_to_java_and_cpp_texts() -> None:
    suffix = stored_properties_suffix("C1")
    assert plain_stored_properties("", suffix) == "MSG_REGION\x01DefaultRegion\x02TRACE_ON\x01true\x02CLUSTER\x01C1"
    assert plain_stored_properties("TAGS\x01a\x02", suffix) == "TAGS\x01a\x02" + suffix  # C++: trailing separator
    assert plain_stored_properties("TAGS\x01a", suffix) == "TAGS\x01a\x02" + suffix
    assert plain_stored_properties("DELAY\x013", suffix) is None
    assert plain_stored_properties("TRAN_MSG\x01true", suffix) is None
