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
    "decode_messages",
]
