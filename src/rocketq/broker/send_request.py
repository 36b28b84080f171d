"""What a send request says and where it may go, read once per request: the values of its header the
send handler uses (``send_values``, read straight from the request's extFields), its whole header
(``send_header``) and whether its topic may take it (``SendTopics``, remembered per topic)."""

from __future__ import annotations

from typing import Final

import msgspec
from mypy_extensions import mypyc_attr

from rocketq.broker.topic_config import TopicConfigManager
from rocketq.protocol import RemotingCommand, SendMessageRequestHeader, TopicConfig
from rocketq.protocol.headers import SEND_V2_HEADER_CODES, SendMessageRequestHeaderV2, parse_send_message_header

SendValues = tuple[str, int, int, int, int, str | None, int | None, bool, int | None]
"""A send header's fields the send handler uses, in this order: topic, queue_id, sys_flag, born_timestamp,
flag, properties, reconsume_times, batch, max_reconsume_times (``SendMessageRequestHeader``'s). A tuple
of known shape: compiled, it is returned and unpacked as plain values, no object made."""


@mypyc_attr(acyclic=True)
class _WireNames:
    """The extFields keys of a send header's fields (the long names, or V2's one-letter ones)."""

    def __init__(self, names: dict[str, str]) -> None:
        self.producer_group = names["producer_group"]
        self.topic = names["topic"]
        self.default_topic = names["default_topic"]
        self.default_topic_queue_nums = names["default_topic_queue_nums"]
        self.queue_id = names["queue_id"]
        self.sys_flag = names["sys_flag"]
        self.born_timestamp = names["born_timestamp"]
        self.flag = names["flag"]
        self.properties = names["properties"]
        self.reconsume_times = names["reconsume_times"]
        self.unit_mode = names["unit_mode"]
        self.batch = names["batch"]
        self.max_reconsume_times = names["max_reconsume_times"]


def _wire_names(header_type: type[SendMessageRequestHeader]) -> _WireNames:
    return _WireNames({field.name: field.encode_name for field in msgspec.structs.fields(header_type)})


_V2_NAMES: Final = _wire_names(SendMessageRequestHeaderV2)
_LONG_NAMES: Final = _wire_names(SendMessageRequestHeader)
_INT64_LIMIT: Final = 2**63
_SMALL_NUMBERS: Final = {str(number): number for number in range(-1, 4096)}
"""The numbers a send header repeats (queue ids, flags, queue counts, retry counts) by their text: read
with one dict lookup instead of ``int`` and ``str``, which cost about 1,300 instructions a number."""


def _decimal(text: str) -> int | None:
    """``text`` as an int when it is the plain decimal text of an int64 (what ``str`` makes of it: an
    optional ``-``, ASCII digits, no leading zero), which the header's conversion reads as the same
    number; None for any other text (some of which that conversion reads too, such as ``1e3``: the
    caller leaves those to it). (``int`` and ``str`` of ints are primitives of compiled code; a string
    method such as ``isdigit`` would be a generic call.)"""
    small = _SMALL_NUMBERS.get(text)
    if small is not None:
        return small
    try:
        value = int(text)
    except ValueError:
        return None
    if -_INT64_LIMIT <= value < _INT64_LIMIT and str(value) == text:
        return value
    return None


def send_values(request: RemotingCommand) -> SendValues:
    """``SendValues`` of a send request: read straight from its extFields when every field of the header
    is present where required and in its plain form (decimal numbers, ``true``/``false``), as clients
    send them; else from ``send_header`` (which raises on what it refuses). The same values either way
    (``tests/broker/test_send_values.py``).

    Raises:
        RemoteProtocolError: The header is invalid.
    """
    fields = request.ext_fields
    names = _V2_NAMES if request.code in SEND_V2_HEADER_CODES else _LONG_NAMES
    topic = fields.get(names.topic)
    queue_id_text = fields.get(names.queue_id)
    sys_flag_text = fields.get(names.sys_flag)
    born_text = fields.get(names.born_timestamp)
    flag_text = fields.get(names.flag)
    queue_nums_text = fields.get(names.default_topic_queue_nums)
    if (
        topic is not None
        and queue_id_text is not None
        and sys_flag_text is not None
        and born_text is not None
        and flag_text is not None
        and queue_nums_text is not None
        and names.producer_group in fields
        and names.default_topic in fields
    ):
        queue_id = _decimal(queue_id_text)
        sys_flag = _decimal(sys_flag_text)
        born_timestamp = _decimal(born_text)
        flag = _decimal(flag_text)
        reconsume_text = fields.get(names.reconsume_times)
        reconsume_times = None if reconsume_text is None else _decimal(reconsume_text)
        max_text = fields.get(names.max_reconsume_times)
        max_reconsume_times = None if max_text is None else _decimal(max_text)
        batch_text = fields.get(names.batch, "false")
        unit_mode_text = fields.get(names.unit_mode, "false")
        if (
            queue_id is not None
            and sys_flag is not None
            and born_timestamp is not None
            and flag is not None
            and _decimal(queue_nums_text) is not None
            and (reconsume_times is not None or reconsume_text is None)
            and (max_reconsume_times is not None or max_text is None)
            and (batch_text == "false" or batch_text == "true")
            and (unit_mode_text == "false" or unit_mode_text == "true")
        ):
            properties = fields.get(names.properties)
            batch = batch_text == "true"
            return (
                topic, queue_id, sys_flag, born_timestamp, flag, properties, reconsume_times, batch, max_reconsume_times
            )  # fmt: skip
    header = send_header(request)
    return (
        header.topic, header.queue_id, header.sys_flag, header.born_timestamp, header.flag, header.properties,
        header.reconsume_times, header.batch, header.max_reconsume_times,
    )  # fmt: skip


def send_header(request: RemotingCommand) -> SendMessageRequestHeader:
    """``parse_send_message_header`` of a send request, its first conversion called from here (compiled)
    instead of through two interpreted calls; a header that conversion refuses goes through
    ``parse_send_message_header`` itself, which normalises it or raises its error.

    Raises:
        RemoteProtocolError: The header is invalid.
    """
    header_type = SendMessageRequestHeaderV2 if request.code in SEND_V2_HEADER_CODES else SendMessageRequestHeader
    try:
        header: SendMessageRequestHeader = msgspec.convert(request.ext_fields, header_type, strict=False)
    except msgspec.ValidationError:
        return parse_send_message_header(request.code, request.ext_fields)
    return header


class SendTopics:
    """The topic configs that sends found sendable: a valid name in the cluster (``topic_name_problem_in_cluster``),
    not one the broker writes itself, known, and writable. What makes a topic so changes only with its
    config (an update, a delete, a permission change, a slave taking its master's table: each gives the
    table a new ``data_version``) or the cluster's name, so a send to a remembered topic skips the checks;
    any change forgets them all (at most ``MAX_NAMES`` are kept; then it starts over)."""

    MAX_NAMES: Final = 4096

    def __init__(self, topics: TopicConfigManager) -> None:
        self._topics = topics
        self._version: object = None
        self._cluster = ""
        self._configs: dict[str, TopicConfig] = {}

    def get(self, topic: str, cluster_name: str) -> TopicConfig | None:
        """The config of ``topic`` when a send found it sendable since the last change, else None."""
        if self._version is not self._topics.data_version or cluster_name != self._cluster:
            self._forget(cluster_name)
            return None
        return self._configs.get(topic)

    def remember(self, topic: str, config: TopicConfig, cluster_name: str) -> None:
        """``config`` of ``topic`` passed a send's checks (the table's current one, else not kept)."""
        if self._version is not self._topics.data_version or cluster_name != self._cluster:
            self._forget(cluster_name)
        if self._topics.get(topic) is not config:  # (changed since it was read: checked again next time)
            return
        if len(self._configs) >= self.MAX_NAMES:
            self._configs.clear()
        self._configs[topic] = config

    def _forget(self, cluster_name: str) -> None:
        self._configs.clear()
        self._version = self._topics.data_version
        self._cluster = cluster_name
