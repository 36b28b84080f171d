"""``rocketq admin clusterList`` and ``haStatus`` on a master and its slave: roles, the slaves a master
sees in sync, how far a slave is behind (GET_BROKER_HA_STATUS 907, GET_BROKER_RUNTIME_INFO's brokerRole)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from rocketq.admin.cli import admin
from rocketq.broker.config import BrokerRole
from rocketq.client import Message, SyncProducer
from rocketq.testing import ThreadedCluster, wait_until
from rocketq.testing.cluster import wait_replicated


def invoke(cluster: ThreadedCluster, *args: str) -> Any:
    result = CliRunner().invoke(admin, [args[0], "-n", cluster.namesrv_addr, *args[1:]], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output) if "--json" in args else result.output


def send(cluster: ThreadedCluster, count: int) -> None:
    with SyncProducer(group="P", namesrv_addr=cluster.namesrv_addr) as producer:
        for i in range(count):
            producer.send(Message("Replicated", f"m{i}".encode() * 50))


def rows_by_id(cluster: ThreadedCluster) -> dict[int, dict[str, Any]]:
    return {row["brokerId"]: row for row in invoke(cluster, "clusterList", "--json")}


def test_cluster_list_shows_roles_slaves_in_sync_and_a_slaves_lag(tmp_path: Path) -> None:
    with ThreadedCluster(tmp_path, broker_role=BrokerRole.SYNC_MASTER) as cluster:
        master = cluster.cluster.brokers[0]
        slave = cluster.call(cluster.cluster.start_slave(0))
        send(cluster, 50)
        end = master.store.commit_log.max_offset
        cluster.call(wait_replicated(end, slave))

        rows = rows_by_id(cluster)
        assert [rows[0]["role"], rows[1]["role"]] == ["SYNC_MASTER", "SLAVE"]
        assert rows[0]["commitLogMaxOffset"] == rows[1]["commitLogMaxOffset"] == end
        assert rows[1]["lagBytes"] == 0 and rows[0]["lagBytes"] == 0
        [seen] = rows[0]["slaves"]
        assert seen["slaveAckOffset"] == end and seen["diff"] == 0 and seen["inSync"] is True
        table = invoke(cluster, "clusterList")
        assert "SYNC_MASTER" in table and "SLAVE" in table and "1/1" in table

        master_status = invoke(cluster, "haStatus", "-b", master.address, "--json")
        assert master_status["master"] is True and master_status["masterCommitLogMaxOffset"] == end
        assert master_status["inSyncSlaveNums"] == 1
        assert [c["slaveAckOffset"] for c in master_status["haConnectionInfo"]] == [end]
        slave_status = invoke(cluster, "haStatus", "-b", slave.address, "--json")
        client = slave_status["haClientRuntimeInfo"]
        assert slave_status["master"] is False and client["isActivated"] is True
        assert client["maxOffset"] == end and client["masterAddr"] == master.ha_address
        assert client["lastReadTimestamp"] > 0

        # the slave restarted towards a master address where nothing listens: it falls behind by exactly
        # what the master took meanwhile, and its master no longer lists it
        cluster.call(cluster.cluster.stop_slave(slave))
        wait_until(lambda: not master.replication_state().slaves, 20, what="the master to drop the slave")
        send(cluster, 30)
        cluster.call(cluster.cluster.start_slave(0, ha_master_address="127.0.0.1:9"))
        behind = master.store.commit_log.max_offset - end
        assert behind > 0
        rows = rows_by_id(cluster)
        assert rows[1]["lagBytes"] == behind and rows[1]["commitLogMaxOffset"] == end
        assert rows[0]["slaves"] == [] and rows[0]["lagBytes"] is None
        assert (
            invoke(cluster, "haStatus", "-b", rows[1]["address"], "--json")["haClientRuntimeInfo"]["isActivated"]
            is False
        )
