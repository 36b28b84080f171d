"""The NameServer: brokers register here, clients and admin tools look up routes here."""

from rocketq.namesrv.config import NamesrvConfig, NamesrvConfigError
from rocketq.namesrv.handlers import NamesrvProcessor
from rocketq.namesrv.kv_config import ORDER_TOPIC_CONFIG, KVConfigTable
from rocketq.namesrv.route_table import BrokerLiveInfo, RegisterResult, RemovedBroker, RouteTable
from rocketq.namesrv.server import NameServer, run

__all__ = [
    "ORDER_TOPIC_CONFIG",
    "BrokerLiveInfo",
    "KVConfigTable",
    "NameServer",
    "NamesrvConfig",
    "NamesrvConfigError",
    "NamesrvProcessor",
    "RegisterResult",
    "RemovedBroker",
    "RouteTable",
    "run",
]
