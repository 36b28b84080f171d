"""JSON bodies of RocketMQ commands (docs/protocol.md#bodies), one import for all of them.

The bodies live by subsystem: :mod:`rocketq.protocol.json_body` (the base class and how bodies are
read and written), :mod:`rocketq.protocol.route_bodies` (routes, clusters, broker registration),
:mod:`rocketq.protocol.client_bodies` (heartbeats, subscriptions, group members, queue locks) and
:mod:`rocketq.protocol.admin_bodies` (consumer groups' connections, stats, offsets and settings; topic
stats). This module re-exports them all.
"""

from __future__ import annotations

from rocketq.protocol.admin_bodies import (
    ClientConnection,
    ConsumerConnection,
    ConsumerOffsetSerializeWrapper,
    ConsumeStats,
    MessageQueueOffset,
    QueueConsumeStats,
    QueueStats,
    ResetOffsetBody,
    SubscriptionGroupConfigBody,
    SubscriptionGroupWrapper,
    TopicStatsTable,
)
from rocketq.protocol.client_bodies import (
    CheckClientRequestBody,
    ConsumeFromWhere,
    ConsumerData,
    ConsumerListBody,
    ConsumeType,
    GetConsumerListByGroupResponseBody,
    GroupList,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageModel,
    MessageQueue,
    ProducerData,
    SubscriptionData,
    UnlockBatchRequestBody,
)
from rocketq.protocol.json_body import (
    JsonBody,
)
from rocketq.protocol.route_bodies import (
    BrokerData,
    ClusterInfo,
    DataVersion,
    KVTable,
    QueueData,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicFilterType,
    TopicList,
    TopicRouteData,
)

__all__ = [
    "BrokerData",
    "CheckClientRequestBody",
    "ClientConnection",
    "ClusterInfo",
    "ConsumeFromWhere",
    "ConsumeStats",
    "ConsumeType",
    "ConsumerConnection",
    "ConsumerData",
    "ConsumerListBody",
    "ConsumerOffsetSerializeWrapper",
    "DataVersion",
    "GetConsumerListByGroupResponseBody",
    "GroupList",
    "HeartbeatData",
    "JsonBody",
    "KVTable",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "MessageModel",
    "MessageQueue",
    "MessageQueueOffset",
    "ProducerData",
    "QueueConsumeStats",
    "QueueData",
    "QueueStats",
    "RegisterBrokerBody",
    "ResetOffsetBody",
    "SubscriptionData",
    "SubscriptionGroupConfigBody",
    "SubscriptionGroupWrapper",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
    "TopicFilterType",
    "TopicList",
    "TopicRouteData",
    "TopicStatsTable",
    "UnlockBatchRequestBody",
]
