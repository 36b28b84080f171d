"""rocketq clients: an async core and blocking facades."""

from rocketq.client.config import ClientConfig, ConsumeFromWhere, ConsumerConfig, MessageModel, ProducerConfig
from rocketq.client.errors import BrokerResponseError, MQClientError
from rocketq.client.listener import ConsumeStatus, Reconsume
from rocketq.client.message import Message, MessageExt, MessageQueue, SendResult, SendStatus, decode_messages
from rocketq.client.producer import Producer
from rocketq.client.pull_consumer import PullConsumer
from rocketq.client.push_consumer import PushConsumer
from rocketq.client.selector import MessageSelector
from rocketq.client.sync import SyncProducer, SyncPullConsumer, SyncPushConsumer
from rocketq.client.sync_transactions import SyncTransactionGroup, SyncTransactionProducer
from rocketq.client.transaction_group import TransactionGroup, TransactionGroupError
from rocketq.client.transactions import TransactionProducer, TransactionSendResult, TransactionState
from rocketq.protocol.transactions import TransactionGroupResult

__all__ = [
    "BrokerResponseError",
    "ClientConfig",
    "ConsumeFromWhere",
    "ConsumeStatus",
    "ConsumerConfig",
    "MQClientError",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "MessageSelector",
    "Producer",
    "ProducerConfig",
    "PullConsumer",
    "PushConsumer",
    "Reconsume",
    "SendResult",
    "SendStatus",
    "SyncProducer",
    "SyncPullConsumer",
    "SyncPushConsumer",
    "SyncTransactionGroup",
    "SyncTransactionProducer",
    "TransactionGroup",
    "TransactionGroupError",
    "TransactionGroupResult",
    "TransactionProducer",
    "TransactionSendResult",
    "TransactionState",
    "decode_messages",
]
