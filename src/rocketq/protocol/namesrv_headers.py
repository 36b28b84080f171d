"""Custom headers used only by NameServer requests that :mod:`rocketq.protocol.headers` lacks.

Field names and required-ness follow ``common/…/protocol/header/namesrv/*.java`` (4.9.8): fields
without a default are ``@CFNotNull`` there.
"""

from __future__ import annotations

from rocketq.protocol.codes import RequestCode
from rocketq.protocol.ext_fields import RequestHeader, ResponseHeader


class PutKVConfigRequestHeader(RequestHeader, frozen=True, kw_only=True):
    CODE = RequestCode.PUT_KV_CONFIG

    namespace: str
    key: str
    value: str


class GetKVConfigRequestHeader(RequestHeader, frozen=True, kw_only=True):
    CODE = RequestCode.GET_KV_CONFIG

    namespace: str
    key: str


class GetKVConfigResponseHeader(ResponseHeader, frozen=True, kw_only=True):
    value: str | None = None


class DeleteKVConfigRequestHeader(RequestHeader, frozen=True, kw_only=True):
    CODE = RequestCode.DELETE_KV_CONFIG

    namespace: str
    key: str


class GetKVListByNamespaceRequestHeader(RequestHeader, frozen=True, kw_only=True):
    CODE = RequestCode.GET_KVLIST_BY_NAMESPACE

    namespace: str


class DeleteTopicFromNamesrvRequestHeader(RequestHeader, frozen=True, kw_only=True):
    """DELETE_TOPIC_IN_NAMESRV (216). Newer admin tools add ``clusterName`` to limit the delete."""

    CODE = RequestCode.DELETE_TOPIC_IN_NAMESRV

    topic: str
    cluster_name: str | None = None


class GetTopicsByClusterRequestHeader(RequestHeader, frozen=True, kw_only=True):
    CODE = RequestCode.GET_TOPICS_BY_CLUSTER

    cluster: str


class WipeWritePermOfBrokerRequestHeader(RequestHeader, frozen=True, kw_only=True):
    CODE = RequestCode.WIPE_WRITE_PERM_OF_BROKER

    broker_name: str


class WipeWritePermOfBrokerResponseHeader(ResponseHeader, frozen=True, kw_only=True):
    wipe_topic_count: int


class AddWritePermOfBrokerRequestHeader(RequestHeader, frozen=True, kw_only=True):
    CODE = RequestCode.ADD_WRITE_PERM_OF_BROKER

    broker_name: str


class AddWritePermOfBrokerResponseHeader(ResponseHeader, frozen=True, kw_only=True):
    add_topic_count: int
