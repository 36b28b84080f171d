"""Hypothesis strategies for the clients' send and pull requests: the arguments of
``rocketq.client.send_checks.send_request`` and ``rocketq.client.pull.pull_request`` over the values the
wire allows. Shared by the tests that hold a written request equal to its header
(``tests/client/test_written_headers.py``) and to the generic encoder's bytes
(``tests/protocol/test_request_templates.py``), so both draw the same requests."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from rocketq.client.config import ProducerConfig
from rocketq.client.message import MessageQueue
from rocketq.client.pull import pull_request
from rocketq.client.send_checks import SendSettings, send_request
from rocketq.common.message import encode_properties
from rocketq.protocol import RemotingCommand

GROUPS = st.from_regex(r"[A-Za-z0-9_%|-]{1,30}", fullmatch=True)
"""Names a producer's config accepts (a retry group's ``%`` included)."""

TOPICS = st.text(min_size=1, max_size=30)

INT32 = st.integers(-(2**31), 2**31 - 1)


@dataclass(frozen=True)
class PullArguments:
    """What ``pull_request`` is called with."""

    group: str
    queue: MessageQueue
    offset: int
    max_nums: int
    expression: str
    commit_offset: int
    suspend_ms: int
    sub_version: int
    max_bytes: int | None

    def request(self) -> RemotingCommand:
        return pull_request(
            self.group,
            self.queue,
            self.offset,
            self.max_nums,
            self.expression,
            commit_offset=self.commit_offset,
            suspend_ms=self.suspend_ms,
            sub_version=self.sub_version,
            max_bytes=self.max_bytes,
        )


PULLS = st.builds(
    PullArguments,
    group=st.one_of(GROUPS, st.text(min_size=1, max_size=20)),  # a consumer's pull checks no name
    queue=st.builds(MessageQueue, TOPICS, st.just("broker-a"), st.integers(0, 1023)),
    offset=st.integers(0, 2**62),
    max_nums=st.integers(1, 1024),
    expression=st.sampled_from(["", "*", "TagA || TagB", 'a > 3 AND b = "x\\y"']),
    commit_offset=st.integers(-1, 2**62),
    suspend_ms=st.sampled_from([0, 15_000]),
    sub_version=st.integers(0, 2**62),
    max_bytes=st.one_of(st.none(), st.integers(1, 2**31)),
)
"""Pull requests' arguments: with and without a commit offset, a suspension, a byte limit."""


@dataclass(frozen=True)
class SendArguments:
    """What ``send_request`` is called with (the body aside: it is not in the header)."""

    group: str
    queue: MessageQueue
    properties: str
    sys_flag: int
    flag: int
    batch: bool
    oneway: bool
    idempotent: bool
    born_ms: int

    @property
    def config(self) -> ProducerConfig:
        return ProducerConfig(group=self.group)

    def request(self) -> RemotingCommand:
        return send_request(
            SendSettings(self.config),
            self.queue,
            b"body",
            self.properties,
            self.sys_flag,
            self.flag,
            batch=self.batch,
            oneway=self.oneway,
            idempotent=self.idempotent,
            born_ms=self.born_ms,
        )


SENDS = st.builds(
    SendArguments,
    group=GROUPS,
    queue=st.builds(MessageQueue, TOPICS, st.just("broker-a"), st.integers(0, 1023)),
    properties=st.one_of(
        st.text(max_size=40),  # any text: the header carries it as it is
        st.dictionaries(st.text(min_size=1, max_size=8).filter(str.isidentifier), st.text(max_size=20), max_size=3).map(
            encode_properties
        ),
    ),
    sys_flag=st.one_of(st.sampled_from([0, 1]), st.integers(0, 2**31 - 1)),
    flag=INT32,
    batch=st.booleans(),
    oneway=st.booleans(),
    idempotent=st.booleans(),
    born_ms=st.integers(0, 2**62),
)
"""Send requests' arguments: single and batch, one-way or not, idempotent or not."""
