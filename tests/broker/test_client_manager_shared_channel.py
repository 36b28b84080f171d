"""One client connection that holds a producer group AND a consumer group (as a RocketMQ Java or C++ client
instance shared by a producer and a consumer does): the broker's client table keeps both, and dropping
one group leaves the other."""

from __future__ import annotations

from rocketq.broker.client_manager import ClientChannel, ClientManager, build_subscription

CLIENT_ID = "127.0.0.1@4242"


def _shared_channel(connection: object, last_update: float = 0.0) -> ClientChannel:
    return ClientChannel(CLIENT_ID, connection, "PYTHON", 0, last_update)


def _register_both(clients: ClientManager, connection: object, last_update: float = 0.0) -> None:
    clients.register_producer("producers", _shared_channel(connection, last_update))
    clients.register_consumer(
        "consumers",
        _shared_channel(connection, last_update),
        consume_type="CONSUME_PASSIVELY",
        message_model="CLUSTERING",
        consume_from_where="CONSUME_FROM_LAST_OFFSET",
        subscriptions=[build_subscription("orders", "*")],
    )


def test_one_channel_is_member_of_a_producer_and_a_consumer_group() -> None:
    clients, connection = ClientManager(), object()
    _register_both(clients, connection)
    assert clients.consumer_ids("consumers") == [CLIENT_ID]
    assert clients.channels_of("consumers") == [connection]
    assert [c.client_id for c in clients.producers["producers"].values()] == [CLIENT_ID]


def test_unregistering_the_producer_group_keeps_the_consumer_group() -> None:
    clients, connection = ClientManager(), object()
    _register_both(clients, connection)
    assert clients.unregister(CLIENT_ID, "producers", None) == []
    assert "producers" not in clients.producers
    assert clients.consumer_ids("consumers") == [CLIENT_ID]
    assert clients.subscription("consumers", "orders") is not None


def test_unregistering_the_consumer_group_keeps_the_producer_group() -> None:
    clients, connection = ClientManager(), object()
    _register_both(clients, connection)
    assert clients.unregister(CLIENT_ID, None, "consumers") == ["consumers"]
    assert clients.consumer_ids("consumers") == []
    assert [c.channel for c in clients.producers["producers"].values()] == [connection]


def test_a_closed_shared_connection_leaves_both_groups_and_expires_once() -> None:
    clients, connection = ClientManager(), object()
    _register_both(clients, connection, last_update=0.0)
    assert clients.expired_channels(now=200.0, timeout_s=120.0) == [connection]
    assert clients.remove_channel(connection) == ["consumers"]
    assert clients.producers == {} and clients.consumers == {}
