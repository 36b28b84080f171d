"""``rocketq admin`` broker and cluster commands against a live cluster whose brokers run on a fake
clock: brokerStatus (GET_BROKER_RUNTIME_INFO with RocketMQ's keys and formats), clusterList's TPS,
topicClusterList, wipeWritePerm/addWritePerm, deleteSubGroup."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocketq.admin.cli import admin
from rocketq.broker.config import BrokerConfig
from rocketq.broker.server import Broker
from rocketq.client import (
    ClientConfig,
    ConsumeFromWhere,
    ConsumerConfig,
    Message,
    MessageQueue,
    Producer,
    ProducerConfig,
    SyncPushConsumer,
)
from rocketq.client.admin import AdminClient
from rocketq.client.admin_cluster import broker_config, clean_expired_consume_queues, update_broker_config
from rocketq.protocol import RequestCode
from rocketq.testing import FakeClock, LocalCluster, ThreadedCluster, wait_until

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


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[tuple[ThreadedCluster, FakeClock]]:
    """A cluster of its own, whose counters no other test moved, on a clock of its own."""
    clock = FakeClock()
    with ThreadedCluster(tmp_path, brokers=1, clock=clock) as running:
        yield running, clock


def test_broker_status_has_rocketmq_keys_and_rates_from_the_brokers_clock(
    fresh: tuple[ThreadedCluster, FakeClock],
) -> None:
    cluster, clock = fresh
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


def test_get_and_update_broker_config_at_run_time(cluster: ThreadedCluster) -> None:
    address = broker_address(cluster)
    settings = json.loads(invoke(cluster, "getBrokerConfig", "-b", address, "--json"))
    assert settings["brokerName"] == "broker-a" and settings["maxMessageSize"] == str(4 * 1024 * 1024)
    assert settings["maxTransferBytesOnMessageInMemory"] == str(256 * 1024)  # RocketMQ's key, not the field's name
    assert settings["flushDiskType"] == "ASYNC_FLUSH" and settings["longPollingEnable"] == "true"
    assert "maxMessageSize" in invoke(cluster, "getBrokerConfig", "-c", "DefaultCluster")
    assert json.loads(invoke(cluster, "cleanExpiredCQ", "--json")) == [{"broker": address, "deletedFiles": 0}]
    assert "deletedFiles" in invoke(cluster, "cleanExpiredCQ", "-b", address)

    invoke(cluster, "updateTopic", "-t", "ConfigTopic", "-r", "1", "-w", "1")
    invoke(cluster, "updateBrokerConfig", "-b", address, "-k", "maxMessageSize", "-v", "64")
    assert json.loads(invoke(cluster, "getBrokerConfig", "-b", address, "--json"))["maxMessageSize"] == "64"
    refused = invoke(cluster, "sendMessage", "-t", "ConfigTopic", "-p", "x" * 100, code=1)
    assert "64" in refused
    invoke(cluster, "updateBrokerConfig", "-c", "DefaultCluster", "-k", "maxMessageSize", "-v", str(4 * 1024 * 1024))
    invoke(cluster, "sendMessage", "-t", "ConfigTopic", "-p", "x" * 100)

    fixed = json.loads(
        invoke(cluster, "updateBrokerConfig", "-b", address, "-k", "listenPort", "-v", "1", "--json", code=1)
    )
    assert "cannot change while the broker runs" in fixed["error"] and "maxMessageSize" in fixed["error"]
    assert "no broker setting" in invoke(
        cluster, "updateBrokerConfig", "-b", address, "-k", "noSuchKey", "-v", "1", code=1
    )
    wrong = invoke(cluster, "updateBrokerConfig", "-b", address, "-k", "longPollingEnable", "-v", "maybe", code=1)
    assert "longPollingEnable" in wrong
    assert json.loads(invoke(cluster, "getBrokerConfig", "-b", address, "--json"))["longPollingEnable"] == "true"


async def test_an_update_is_written_to_the_brokers_config_file(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("# my broker\nbrokerName=broker-z\nmaxMessageSize = 1000\n", encoding="utf-8")
    async with LocalCluster(tmp_path, brokers=0) as cluster:
        config = BrokerConfig.load(
            conf,
            overrides={
                "namesrv_addr": cluster.namesrv_addr,
                "listen_host": "127.0.0.1",
                "listen_port": 0,
                "broker_ip1": "127.0.0.1",
                "store_path_root_dir": tmp_path / "store",
                "mapped_file_size_commit_log": 1024 * 1024,
            },
        )
        broker = Broker(config, config_file=conf)
        await broker.start()
        try:
            async with AdminClient(cluster.namesrv_addr) as client:
                await update_broker_config(client, broker.address, "maxMessageSize", "2000")
                await update_broker_config(client, broker.address, "defaultQueryMaxNum", "7")
                assert (await broker_config(client, broker.address))["maxMessageSize"] == "2000"
        finally:
            await broker.aclose()
    assert conf.read_text(encoding="utf-8") == (
        "# my broker\nbrokerName=broker-z\nmaxMessageSize=2000\ndefaultQueryMaxNum=7\n"
    )
    again = BrokerConfig.load(conf)
    assert again.max_message_size == 2000 and again.default_query_max_num == 7


def test_send_message_to_a_chosen_queue(cluster: ThreadedCluster) -> None:
    invoke(cluster, "updateTopic", "-t", "QueueTopic", "-r", "4", "-w", "4")
    for _ in range(3):
        sent = json.loads(
            invoke(cluster, "sendMessage", "-t", "QueueTopic", "-p", "q", "-b", "broker-a", "-i", "2", "--json")
        )
        assert (sent["broker"], sent["queueId"]) == ("broker-a", 2)
    status = json.loads(invoke(cluster, "topicStatus", "-t", "QueueTopic", "--json"))
    assert {s["queueId"]: s["maxOffset"] for s in status} == {0: 0, 1: 0, 2: 3, 3: 0}
    missing = invoke(cluster, "sendMessage", "-t", "QueueTopic", "-p", "q", "-b", "broker-a", "-i", "9", code=1)
    assert "no writable queue 9" in missing
    assert "go together" in invoke(cluster, "sendMessage", "-t", "QueueTopic", "-p", "q", "-i", "1", code=2)


def test_stats_all(fresh: tuple[ThreadedCluster, FakeClock]) -> None:
    cluster, clock = fresh
    invoke(cluster, "updateTopic", "-t", "StatsTopic", "-r", "2", "-w", "2")
    invoke(cluster, "updateTopic", "-t", "QuietTopic", "-r", "1", "-w", "1")
    for i in range(10):
        invoke(cluster, "sendMessage", "-t", "StatsTopic", "-p", f"s{i}")
    received: list[object] = []
    config = ConsumerConfig(
        group="StatsGroup",
        client=ClientConfig(namesrv_addr=cluster.namesrv_addr),
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        persist_consumer_offset_interval_s=0.1,
    )
    with SyncPushConsumer(config, lambda messages: bool(received.extend(messages)) or True) as consumer:
        consumer.subscribe("StatsTopic")
        consumer.start()
        wait_until(lambda: len(received) >= 10)
    for i in range(4):  # sent once the group is gone: its backlog
        invoke(cluster, "sendMessage", "-t", "StatsTopic", "-p", f"late{i}")
    clock.advance(5.0)  # the rates run from the broker's first copy of its counters, 5 s before now
    rows = json.loads(invoke(cluster, "statsAll", "-t", "StatsTopic", "--json"))
    stats = next(r for r in rows if r["consumerGroup"] == "StatsGroup")
    assert stats["accumulation"] == 4
    assert stats["inMsg24Hour"] == 14 and stats["outMsg24Hour"] == 10
    assert stats["inTps"] == round(14 / 5, 2) and stats["outTps"] == round(10 / 5, 2)
    everything = json.loads(invoke(cluster, "statsAll", "--json"))
    assert not any(r["topic"].startswith("%RETRY%") for r in everything)
    quiet = next(r for r in everything if r["topic"] == "QuietTopic")
    assert quiet == {
        "topic": "QuietTopic",
        "consumerGroup": None,
        "accumulation": 0,
        "inTps": 0.0,
        "outTps": 0.0,
        "inMsg24Hour": 0,
        "outMsg24Hour": 0,
    }
    active = json.loads(invoke(cluster, "statsAll", "-a", "--json"))
    assert {r["topic"] for r in active} == {"StatsTopic"}
    table = invoke(cluster, "statsAll", "-t", "StatsTopic")
    assert "#InMsg24Hour" in table and "StatsGroup" in table


def test_send_timings(cluster: ThreadedCluster) -> None:
    invoke(cluster, "updateTopic", "-t", "TimedTopic", "-r", "3", "-w", "3")
    checked = json.loads(invoke(cluster, "checkMsgSendRT", "-t", "TimedTopic", "-a", "6", "-s", "64", "--json"))
    assert [s["queueId"] for s in checked["sends"]] == [0, 1, 2, 0, 1, 2]
    assert all(s["sendResult"] and s["result"] == "SEND_OK" and s["rtMs"] > 0 for s in checked["sends"])
    assert checked["avgRtMs"] > 0
    assert "Avg RT: " in invoke(cluster, "checkMsgSendRT", "-t", "TimedTopic", "-a", "2")
    rt = json.loads(invoke(cluster, "clusterRT", "-a", "3", "--json"))
    assert [(r["cluster"], r["broker"], r["successCount"], r["failCount"]) for r in rt] == [
        ("DefaultCluster", "broker-a", 3, 0)
    ]
    assert rt[0]["rtMs"] > 0
    assert "#successCount" in invoke(cluster, "clusterRT", "-a", "1", "-c", "DefaultCluster")
    assert "NoCluster" in invoke(cluster, "clusterRT", "-c", "NoCluster", code=1)


async def test_clean_expired_cq_after_commit_log_files_were_removed(tmp_path: Path) -> None:
    sizes = {"mapped_file_size_commit_log": 64 * 1024, "mapped_file_size_consume_queue": 20 * 16}
    async with LocalCluster(tmp_path, brokers=1, **sizes) as cluster:
        async with AdminClient(cluster.namesrv_addr) as client:
            await client.update_topic("OldTopic", cluster="DefaultCluster", read_queues=1, write_queues=1)
        async with Producer(
            ProducerConfig(group="Filler", client=ClientConfig(namesrv_addr=cluster.namesrv_addr))
        ) as producer:
            for _ in range(200):  # 200 records of ~1.1 KB: four CommitLog files, 13 ConsumeQueue files
                await producer.send(Message("OldTopic", b"x" * 1000))
        await cluster.wait_dispatched()
        broker = cluster.brokers[0]
        store_dir = broker.config.store_path_root_dir
        await broker.aclose()
        commit_logs = sorted((store_dir / "commitlog").iterdir())
        assert len(commit_logs) >= 3
        for old in commit_logs[:2]:  # removed by hand while the broker was down
            old.unlink()
        queue_dir = store_dir / "consumequeue" / "OldTopic" / "0"
        before = len(list(queue_dir.iterdir()))
        broker = await cluster.start_broker(0)
        async with AdminClient(cluster.namesrv_addr) as client:
            deleted = await clean_expired_consume_queues(client, broker.address)
            assert deleted > 0 and len(list(queue_dir.iterdir())) == before - deleted
            assert await clean_expired_consume_queues(client, broker.address) == 0  # nothing left to clean
            low = (await client.topic_status("OldTopic"))[0].min_offset
            assert low > 0
            assert (await client.query_by_offset("OldTopic", "broker-a", 0, 199)).queue_offset == 199
