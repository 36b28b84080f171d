"""GET_BROKER_HA_STATUS (907, RocketMQ 5's): a broker's replication as RocketMQ's HARuntimeInfo body.

A master answers ``master`` true, its CommitLog end and one ``haConnectionInfo`` row per connected
slave (its acknowledged offset, ``diff`` bytes behind, whether it is in sync); a slave answers
``master`` false and ``haClientRuntimeInfo`` (its master's HA address, its own CommitLog end, when it
last read from and wrote to its master). ``rocketq admin haStatus`` and ``clusterList`` read it."""

from __future__ import annotations

import msgspec

from rocketq.protocol.bodies import JsonBody


class HAConnectionRuntimeInfo(JsonBody, frozen=True, kw_only=True):
    """A slave as its master sees it."""

    addr: str = ""
    slave_ack_offset: int = 0
    diff: int = 0  # the master's CommitLog end minus ``slave_ack_offset``
    in_sync: bool = False
    transferred_byte_in_second: int = 0
    transfer_from_where: int = 0


class HAClientRuntimeInfo(JsonBody, frozen=True, kw_only=True):
    """A slave's own view."""

    master_addr: str = ""
    transferred_byte_in_second: int = 0
    max_offset: int = 0
    last_read_timestamp: int = 0
    last_write_timestamp: int = 0
    master_flush_offset: int = 0
    is_activated: bool = msgspec.field(default=False, name="isActivated")


class HARuntimeInfo(JsonBody, frozen=True, kw_only=True):
    master: bool = False
    master_commit_log_max_offset: int = 0
    in_sync_slave_nums: int = 0
    ha_connection_info: list[HAConnectionRuntimeInfo] = msgspec.field(default_factory=list)
    ha_client_runtime_info: HAClientRuntimeInfo = msgspec.field(default_factory=HAClientRuntimeInfo)
