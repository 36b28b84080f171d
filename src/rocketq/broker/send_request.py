"""What a send request says and where it may go, read once per request: its header
(``send_header``) and whether its topic may take it (``SendTopics``, remembered per topic)."""

from __future__ import annotations

from typing import Final

import msgspec

from rocketq.broker.topic_config import TopicConfigManager
from rocketq.protocol import RemotingCommand, SendMessageRequestHeader, TopicConfig
from rocketq.protocol.headers import SEND_V2_HEADER_CODES, SendMessageRequestHeaderV2, parse_send_message_header


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
