"""Master/slave replication of the CommitLog (RocketMQ's HA): ``HAMaster`` streams a master's log to
its slaves, ``HASlave`` follows a master; ``frames`` is the wire format, ``state`` what a broker tells
about it. docs/replication.md describes roles and settings."""

from rocketq.replication.master import HAMaster, MasterSettings
from rocketq.replication.slave import HASlave, SlaveSettings
from rocketq.replication.state import ReplicationState, SlaveState

__all__ = ["HAMaster", "HASlave", "MasterSettings", "ReplicationState", "SlaveSettings", "SlaveState"]
