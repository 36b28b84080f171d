"""What a send request says and where it may go, read once per request: its header (``send_header``),
whether its topic may take it (``SendTopics``, remembered per topic) and the properties the broker
adds to what it stores (``stored_properties_suffix``)."""

from __future__ import annotations

import functools
from typing import Final

from rocketq.broker.topic_config import TopicConfigManager
from rocketq.common.message import Property, encode_properties
from rocketq.protocol import RemotingCommand, SendMessageRequestHeader, TopicConfig, ext_header
from rocketq.protocol.headers import SEND_V2_HEADER_CODES, SendMessageRequestHeaderV2

DEFAULT_REGION: Final = "DefaultRegion"  # MSG_REGION of every stored message (no multi-region support)
TRACE_ON: Final = "true"  # TRACE_ON of every stored message
# bound here, read per send (compiled code looks an imported name up in the module's dict per use)
_V2_HEADER_CODES: Final = SEND_V2_HEADER_CODES
_V2_HEADER: Final = SendMessageRequestHeaderV2
_LONG_HEADER: Final = SendMessageRequestHeader


@functools.lru_cache(maxsize=8)
def stored_properties_suffix(cluster: str) -> str:
    """The properties the broker adds to every message it stores, encoded."""
    return encode_properties(
        {Property.MSG_REGION: DEFAULT_REGION, Property.TRACE_SWITCH: TRACE_ON, Property.CLUSTER: cluster}
    )


def send_header(request: RemotingCommand) -> SendMessageRequestHeader:
    """``parse_send_message_header`` of a send request, read by ``ext_header`` (straight from the JSON
    text of a request the server received, no dict).

    Raises:
        RemoteProtocolError: The header is invalid.
    """
    return ext_header(request, _V2_HEADER if request.code in _V2_HEADER_CODES else _LONG_HEADER)


class SendTopics:
    """The topic configs that sends found sendable: a valid name in the cluster (``topic_name_problem_in_cluster``),
    not one the broker writes itself, known, and writable. What makes a topic so changes only with its
    config (an update, a delete, a permission change, a slave taking its master's table: each gives the
    table a new ``data_version``) or the cluster's name, so a send to a remembered topic skips the checks;
    any change forgets them all (at most ``MAX_NAMES`` are kept; then it starts over).

    ``properties_suffix`` is ``stored_properties_suffix`` of the cluster named in the last ``get`` or
    ``remember`` (read once per cluster name, not per send)."""

    MAX_NAMES: Final = 4096

    def __init__(self, topics: TopicConfigManager) -> None:
        self._topics = topics
        self._version: object = None
        self._cluster = ""
        self._configs: dict[str, TopicConfig] = {}
        self.properties_suffix = stored_properties_suffix("")

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
        if cluster_name != self._cluster:
            self.properties_suffix = stored_properties_suffix(cluster_name)
        self._cluster = cluster_name
