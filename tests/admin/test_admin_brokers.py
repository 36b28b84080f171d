"""``rocketq admin`` broker and cluster commands against a live cluster whose brokers run on a fake
clock: brokerStatus (GET_BROKER_RUNTIME_INFO with RocketMQ's keys and formats), clusterList's TPS,
topicClusterList, wipeWritePerm/addWritePerm, deleteSubGroup."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from rocketq.admin.cli import admin
from rocketq.client import MessageQueue
from rocketq.client.admin import AdminClient
from rocketq.protocol import RequestCode
from rocketq.testing import FakeClock, ThreadedCluster, wait_until

JAVA_TPS_KEYS = ("putTps", "getFoundTps", "getMissTps", "getTotalTps", "getTransferedTps")


@pytest.fixture(scope="module")
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, clock: FakeClock) -> Iterator[ThreadedCluster]:
    root = tmp_path_factory.mktemp("admin-brokers")
    # two name servers (wipeWritePerm changes each); registrations a minute apart (a broker's own restores
    # its write permission)
    with ThreadedCluster(
        root, brokers=1, name_servers=2, clock=clock, register_name_server_period_ms=60_000
    ) as running:
        yield running


def invoke(cluster: ThreadedCluster, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(admin, [args[0], "-n", cluster.namesrv_addr, *args[1:]], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def broker_address(cluster: ThreadedCluster) -> str:
    rows = json.loads(invoke(cluster, "clusterList", "--json"))
    return str(rows[0]["address"])


def test_broker_status_has_rocketmq_keys_and_rates_from_the_brokers_clock(
    cluster: ThreadedCluster, clock: FakeClock
) -> None:
    address = broker_address(cluster)
    status = json.loads(invoke(cluster, "brokerStatus", "-b", address, "--json"))
    for key in JAVA_TPS_KEYS:
        assert status[key] == "0.0 0.0 0.0", key
    assert status["brokerVersionDesc"] == "V4_9_8" and status["brokerVersion"] == "409"
    assert status["runtime"].startswith("[ 0 days, 0 hours, ")
    invoke(cluster, "updateTopic", "-t", "StatusTopic", "-r", "1", "-w", "1", "-b", address)
    for i in range(20):
        invoke(cluster, "sendMessage", "-t", "StatusTopic", "-p", f"m{i}")
    invoke(cluster, "queryMsgByOffset", "-t", "StatusTopic", "-b", "broker-a", "-i", "0", "-o", "3")  # a pull of 1
    clock.advance(1.0)  # the broker samples its counters once a second of its clock

    def sampled() -> bool:
        nonlocal status
        status = json.loads(invoke(cluster, "brokerStatus", "-b", address, "--json"))
        return bool(status["putTps"] != "0.0 0.0 0.0")

    wait_until(sampled, what="a sample after the clock moved")
    assert status["putTps"] == "20.0 20.0 20.0"
    assert status["getFoundTps"] == status["getTransferedTps"] == status["getTransferredTps"] == "1.0 1.0 1.0"
    assert status["msgPutTotalTodayNow"] == "20" and status["msgGetTotalTodayNow"] == "1"
    assert int(status["commitLogMaxOffset"]) > int(status["commitLogMinOffset"]) == 0
    assert int(status["earliestMessageTimeStamp"]) > 0 and status["dispatchBehindBytes"].isdigit()
    assert status["remainHowManyDataToFlush"].endswith("B") and 0.0 <= float(status["commitLogDiskRatio"]) <= 1.0
    assert int(status["put_messages"]) == 20  # rocketq's own keys stay (rocketq bench reads them)

    rows = json.loads(invoke(cluster, "clusterList", "--json"))
    assert rows[0]["inTps"] == 20.0 and rows[0]["outTps"] == 1.0 and rows[0]["version"] == "V4_9_8"
    table = invoke(cluster, "clusterList")
    assert "InTPS" in table and "20.00" in table and "V4_9_8" in table

    by_cluster = json.loads(invoke(cluster, "brokerStatus", "-c", "DefaultCluster", "--json"))
    assert list(by_cluster) == [address] and by_cluster[address]["putTps"] == "20.0 20.0 20.0"
    assert "putTps" in invoke(cluster, "brokerStatus", "-b", address)


def test_broker_status_needs_a_broker_or_a_cluster(cluster: ThreadedCluster) -> None:
    assert "-b" in invoke(cluster, "brokerStatus", code=2)
    assert "NoCluster" in invoke(cluster, "brokerStatus", "-c", "NoCluster", code=1)


def group_names(cluster: ThreadedCluster) -> set[str]:
    async def ask() -> bytes:
        async with AdminClient(cluster.namesrv_addr) as client:
            address = next(iter((await client.master_addresses()).values()))
            return bytes((await client.request_broker(address, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).body)

    return set(json.loads(cluster.call(ask()))["subscriptionGroupTable"])


def test_topic_cluster_list_and_write_permission(cluster: ThreadedCluster) -> None:
    invoke(cluster, "updateTopic", "-t", "LayoutTopic", "-r", "2", "-w", "2")
    assert json.loads(invoke(cluster, "topicClusterList", "-t", "LayoutTopic", "--json")) == ["DefaultCluster"]
    assert "DefaultCluster" in invoke(cluster, "topicClusterList", "-t", "LayoutTopic")
    assert "NoSuchTopic" in invoke(cluster, "topicClusterList", "-t", "NoSuchTopic", code=1)

    def perm() -> int:
        route = json.loads(invoke(cluster, "topicRoute", "-t", "LayoutTopic", "--json"))
        return int(route["queueDatas"][0][3])

    assert perm() == 6
    wiped = json.loads(invoke(cluster, "wipeWritePerm", "-b", "broker-a", "--json"))
    assert len(wiped) == 2 and all(row["topics"] > 0 for row in wiped)  # on both name servers
    assert perm() == 4  # read only: producers stop choosing it
    added = json.loads(invoke(cluster, "addWritePerm", "-b", "broker-a", "--json"))
    assert [row["topics"] for row in added] == [row["topics"] for row in wiped]
    assert perm() == 6
    assert "broker-a" in invoke(cluster, "wipeWritePerm", "-b", "broker-a")
    invoke(cluster, "addWritePerm", "-b", "broker-a")


def test_delete_sub_group(cluster: ThreadedCluster) -> None:
    invoke(cluster, "updateTopic", "-t", "GroupTopic", "-r", "1", "-w", "1")
    invoke(cluster, "updateSubGroup", "-g", "DoomedGroup")
    assert "DoomedGroup" in group_names(cluster)

    async def commit() -> None:
        async with AdminClient(cluster.namesrv_addr) as client:
            await client.commit_offsets("DoomedGroup", {MessageQueue("GroupTopic", "broker-a", 0): 0})

    cluster.call(commit())
    assert json.loads(invoke(cluster, "consumerProgress", "-g", "DoomedGroup", "--json"))
    deleted = json.loads(invoke(cluster, "deleteSubGroup", "-g", "DoomedGroup", "-r", "true", "--json"))
    assert deleted["group"] == "DoomedGroup" and len(deleted["brokers"]) == 1
    assert "DoomedGroup" not in group_names(cluster)
    assert "no consume progress" in invoke(cluster, "consumerProgress", "-g", "DoomedGroup", code=1)
    assert "true or false" in invoke(cluster, "deleteSubGroup", "-g", "G", "-r", "maybe", code=2)
