"""The replication parts a broker runs in each role (rocketq.replication), built from its settings: a
master's HA service, a slave's HA client (which compares epochs with its master's before it follows)
and its copy of the master's metadata. ``Broker.start`` makes the ones of its role; a broker whose role
failover changes (``Broker.become_master``/``become_slave``) makes the others."""

from __future__ import annotations

from collections.abc import Callable

from rocketq.broker.config import BrokerConfig
from rocketq.remoting import RemotingClient
from rocketq.remoting.clock import Clock
from rocketq.replication import HAMaster, HASlave, MasterSettings, SlaveSettings
from rocketq.replication.epochs import EpochAnswer, fetch_epochs
from rocketq.store import MessageStore


def new_ha_slave(
    config: BrokerConfig, store: MessageStore, clock: Clock, client: Callable[[], RemotingClient | None]
) -> HASlave:
    """A slave's HA client; ``client()``: the broker's remoting client, asked for the master's epochs."""

    async def master_epochs(address: str) -> EpochAnswer:
        remoting = client()
        assert remoting is not None, "the broker's client is made before its HA client runs"
        return await fetch_epochs(remoting, address)

    return HASlave(
        store,
        master_address=config.ha_master_address or None,
        settings=SlaveSettings(
            heartbeat_interval_s=config.ha_send_heartbeat_interval / 1000,
            housekeeping_interval_s=config.ha_housekeeping_interval / 1000,
        ),
        clock=clock,
        fetch_epochs=master_epochs,
    )


async def start_ha_master(config: BrokerConfig, store: MessageStore, clock: Clock) -> HAMaster:
    """A master's HA service, listening on ``haListenPort`` (a free port when listenPort is 0)."""
    master = HAMaster(
        store,
        host=config.listen_host,
        port=config.ha_port(config.listen_port),
        settings=MasterSettings(
            heartbeat_interval_s=config.ha_send_heartbeat_interval / 1000,
            housekeeping_interval_s=config.ha_housekeeping_interval / 1000,
            transfer_batch_size=config.ha_transfer_batch_size,
            slave_fallbehind_max=config.ha_slave_fallbehind_max,
        ),
        clock=clock,
    )
    return await master.start()
