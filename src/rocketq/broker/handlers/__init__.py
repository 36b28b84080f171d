"""Request handlers, one module per concern; ``handler_table`` assembles them."""

from __future__ import annotations

from rocketq.broker.context import BrokerContext
from rocketq.broker.handlers import (
    admin,
    broker_config,
    clients,
    consumer_calls,
    consumers,
    groups,
    locks,
    offsets,
    pull,
    query,
    replication,
    send,
    send_back,
    transactions,
)
from rocketq.remoting import HandlerTable


def handler_table(context: BrokerContext) -> HandlerTable:
    table: dict[int, object] = {}
    modules = (
        send,
        send_back,
        pull,
        offsets,
        clients,
        locks,
        consumers,
        consumer_calls,
        groups,
        query,
        admin,
        broker_config,
        transactions,
        replication,
    )
    for module in modules:
        table.update(module.handlers(context))
    return table  # type: ignore[return-value]
