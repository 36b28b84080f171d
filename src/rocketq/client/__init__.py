"""rocketq clients: an async core and blocking facades."""

from rocketq.client.admin import AdminClient
from rocketq.client.config import ClientConfig, ConsumeFromWhere, ConsumerConfig, MessageModel, ProducerConfig
from rocketq.client.errors import (
    BrokerResponseError,
    MQClientError,
    MQConnectionError,
    RouteNotFoundError,
    ValidationError,
)
from rocketq.client.listener import ConsumeStatus, Reconsume
from rocketq.client.message import Message, MessageExt, MessageQueue, SendResult, SendStatus, decode_messages
from rocketq.client.producer import Producer
from rocketq.client.pull_consumer import PullConsumer
from rocketq.client.push_consumer import PushConsumer
from rocketq.client.queue_reader import OffsetOutOfRangeError, QueueChunk, QueueReader
from rocketq.client.selector import MessageSelector
from rocketq.client.sync import SyncProducer, SyncPullConsumer, SyncPushConsumer
from rocketq.client.sync_tools import SyncAdminClient, SyncQueueReader
from rocketq.client.sync_transactions import SyncTransactionGroup, SyncTransactionProducer
from rocketq.client.transaction_group import TransactionGroup, TransactionGroupError
from rocketq.client.transactions import TransactionProducer, TransactionSendResult, TransactionState
from rocketq.protocol.transactions import TransactionGroupResult

__all__ = [
    "AdminClient",
    "BrokerResponseError",
    "ClientConfig",
    "ConsumeFromWhere",
    "ConsumeStatus",
    "ConsumerConfig",
    "MQClientError",
    "MQConnectionError",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "MessageSelector",
    "OffsetOutOfRangeError",
    "Producer",
    "ProducerConfig",
    "PullConsumer",
    "PushConsumer",
    "QueueChunk",
    "QueueReader",
    "Reconsume",
    "RouteNotFoundError",
    "SendResult",
    "SendStatus",
    "SyncAdminClient",
    "SyncProducer",
    "SyncPullConsumer",
    "SyncPushConsumer",
    "SyncQueueReader",
    "SyncTransactionGroup",
    "SyncTransactionProducer",
    "TransactionGroup",
    "TransactionGroupError",
    "TransactionGroupResult",
    "TransactionProducer",
    "TransactionSendResult",
    "TransactionState",
    "ValidationError",
    "decode_messages",
]
