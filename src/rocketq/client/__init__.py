"""rocketq clients: an async core and blocking facades."""

from rocketq.client.config import ClientConfig, ProducerConfig
from rocketq.client.errors import BrokerResponseError, MQClientError
from rocketq.client.message import Message, MessageExt, MessageQueue, SendResult, SendStatus, decode_messages
from rocketq.client.producer import Producer
from rocketq.client.sync import SyncProducer

__all__ = [
    "BrokerResponseError",
    "ClientConfig",
    "MQClientError",
    "Message",
    "MessageExt",
    "MessageQueue",
    "Producer",
    "ProducerConfig",
    "SendResult",
    "SendStatus",
    "SyncProducer",
    "decode_messages",
]
