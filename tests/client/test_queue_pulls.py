"""A queue's pull requests written from its template (``rocketq.client.pull.QueuePulls``) are
``pull_request``'s: the same extFields in the same order, the same code, and the header the generic
encoder writes for them, whatever the names, offsets and settings; one template serves only the settings
it was made for."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.client.message import MessageQueue
from rocketq.client.pull import QueuePulls, pull_request
from rocketq.protocol import RemotingCommand
from rocketq.protocol.command import encode_json_header

SETTINGS = st.fixed_dictionaries(
    {
        "group": st.text(max_size=20),
        "queue": st.builds(MessageQueue, st.text(max_size=20), st.just("broker-a"), st.integers(0, 2**31 - 1)),
        "max_nums": st.integers(1, 1024),
        "expression": st.one_of(st.sampled_from(["", "*", "TagA || TagB", 'a > 3 AND b = "x\\y"']), st.text()),
        "suspend_ms": st.sampled_from([0, 1, 15_000, 20_000]),
        "sub_version": st.integers(0, 2**62),
        "expression_type": st.sampled_from(["TAG", "SQL92"]),
    }
)
OFFSETS = st.integers(-(2**63), 2**63 - 1)


def generic_header(command: RemotingCommand) -> bytes:
    """What the generic encoder writes for ``command``'s fields (it ignores ``encoded_header``)."""
    return encode_json_header(command)


@settings(max_examples=300, deadline=None)
@given(SETTINGS, st.lists(st.tuples(OFFSETS, OFFSETS), min_size=1, max_size=4))
def test_each_pull_is_pull_requests(pulled: dict[str, object], offsets: list[tuple[int, int]]) -> None:
    pulls = QueuePulls(**pulled)  # type: ignore[arg-type]
    for offset, commit_offset in offsets:  # (one template, many pulls: the template is not changed by one)
        written = pulls.request(offset, commit_offset)
        reference = pull_request(
            pulls.group,
            pulls.queue,
            offset,
            pulls.max_nums,
            pulls.expression,
            commit_offset=commit_offset,
            suspend_ms=pulls.suspend_ms,
            sub_version=pulls.sub_version,
            expression_type=pulls.expression_type,
        )
        assert list(written.ext_fields.items()) == list(reference.ext_fields.items())
        assert (written.code, written.flag, written.body) == (reference.code, reference.flag, reference.body)
        assert written.opaque != reference.opaque
        assert written.encoded_header == generic_header(written)
        assert reference.encoded_header == generic_header(reference)


@given(SETTINGS)
def test_a_template_serves_only_its_settings(pulled: dict[str, object]) -> None:
    pulls = QueuePulls(**pulled)  # type: ignore[arg-type]
    same = (pulls.group, pulls.max_nums, pulls.expression, pulls.suspend_ms, pulls.sub_version, pulls.expression_type)
    assert pulls.serves(*same)
    for at, other in enumerate([pulls.group + "x", pulls.max_nums + 1, pulls.expression + " ", pulls.suspend_ms + 1]):
        changed = list(same)
        changed[at] = other
        assert not pulls.serves(*changed)  # type: ignore[arg-type]
    assert not pulls.serves(*same[:4], pulls.sub_version + 1, pulls.expression_type)
    assert not pulls.serves(*same[:5], "SQL92" if pulls.expression_type == "TAG" else "TAG")
