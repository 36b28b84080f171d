from __future__ import annotations

from rocketq.namesrv import RouteTable
from rocketq.protocol import DataVersion, TopicConfig, TopicConfigSerializeWrapper

EXPIRY = 120.0


def wrapper(
    *topics: str, counter: int = 1, queues: int = 4, perm: int = 6, sys_flag: int = 0
) -> TopicConfigSerializeWrapper:
    table = {
        topic: TopicConfig(
            topic_name=topic, read_queue_nums=queues, write_queue_nums=queues, perm=perm, topic_sys_flag=sys_flag
        )
        for topic in topics
    }
    return TopicConfigSerializeWrapper(
        topic_config_table=table, data_version=DataVersion(timestamp=1_700_000_000_000, counter=counter)
    )


def register(
    table: RouteTable,
    *,
    cluster: str = "DefaultCluster",
    name: str = "broker-a",
    addr: str = "10.0.0.1:10911",
    broker_id: int = 0,
    topics: TopicConfigSerializeWrapper | None = None,
    now: float = 0.0,
    connection_id: int | None = None,
    filter_servers: list[str] | None = None,
):
    host = addr.rsplit(":", 1)[0]
    return table.register_broker(
        cluster=cluster,
        broker_addr=addr,
        broker_name=name,
        broker_id=broker_id,
        ha_server_addr=f"{host}:10912",
        topic_config_wrapper=topics if topics is not None else wrapper("TopicTest"),
        filter_servers=filter_servers,
        now=now,
        connection_id=connection_id,
    )


def two_clusters() -> RouteTable:
    """broker-a (master + slave) in cluster c1, broker-b (master) in cluster c2; both serve T."""
    table = RouteTable(broker_expiry_s=EXPIRY)
    register(
        table, cluster="c1", name="broker-a", addr="10.0.0.1:10911", topics=wrapper("T", "A-only"), connection_id=1
    )
    register(
        table, cluster="c1", name="broker-a", addr="10.0.0.2:10911", broker_id=1, topics=wrapper("T"), connection_id=2
    )
    register(
        table, cluster="c2", name="broker-b", addr="10.0.1.1:10911", topics=wrapper("T", queues=8), connection_id=3
    )
    return table


def test_route_includes_both_broker_groups_master_and_slave() -> None:
    table = two_clusters()
    route = table.pick_topic_route("T")
    assert route is not None
    assert {q.broker_name: q.read_queue_nums for q in route.queue_datas} == {"broker-a": 4, "broker-b": 8}
    addrs = {b.broker_name: b.broker_addrs for b in route.broker_datas}
    assert addrs == {"broker-a": {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}, "broker-b": {0: "10.0.1.1:10911"}}
    assert {b.broker_name: b.cluster for b in route.broker_datas} == {"broker-a": "c1", "broker-b": "c2"}
    assert route.order_topic_conf is None and route.filter_server_table == {}
    assert table.pick_topic_route("nope") is None


def test_slave_registration_returns_live_master_and_its_ha_address() -> None:
    table = RouteTable()
    slave_first = register(table, addr="10.0.0.2:10911", broker_id=1)
    assert slave_first.master_addr is None and slave_first.ha_server_addr is None
    master = register(table, addr="10.0.0.1:10911")
    assert master.master_addr is None  # only slaves are told
    slave = register(table, addr="10.0.0.2:10911", broker_id=1)
    assert (slave.master_addr, slave.ha_server_addr) == ("10.0.0.1:10911", "10.0.0.1:10912")


def test_slave_topic_tables_do_not_create_queue_data() -> None:
    table = RouteTable()
    register(table, addr="10.0.0.2:10911", broker_id=1, topics=wrapper("SlaveOnly"))
    assert table.all_topics() == []
    assert table.pick_topic_route("SlaveOnly") is None


def test_queue_data_changes_only_with_a_new_data_version() -> None:
    table = RouteTable()
    register(table, topics=wrapper("T", counter=1, queues=4))
    # Same DataVersion: the table content is ignored, as the Java NameServer does.
    register(table, topics=wrapper("T", "Other", counter=1, queues=16), now=1)
    route = table.pick_topic_route("T")
    assert route is not None and route.queue_datas[0].write_queue_nums == 4
    assert table.all_topics() == ["T"]
    assert table.is_topic_config_changed("10.0.0.1:10911", DataVersion(timestamp=1_700_000_000_000, counter=1)) is False
    # A new DataVersion applies it.
    register(table, topics=wrapper("T", "Other", counter=2, queues=16), now=2)
    route = table.pick_topic_route("T")
    assert route is not None and route.queue_datas[0].write_queue_nums == 16
    assert sorted(table.all_topics()) == ["Other", "T"]
    assert table.data_version("10.0.0.1:10911") == DataVersion(timestamp=1_700_000_000_000, counter=2)


def test_first_registration_of_an_address_applies_its_table_even_with_a_known_version() -> None:
    table = RouteTable()
    register(table, addr="10.0.0.1:10911", topics=wrapper("T", counter=5))
    table.remove_by_connection(0)  # no-op: registered without a connection id
    removed = table.scan_expired(now=EXPIRY + 1)
    assert [r.broker_addr for r in removed] == ["10.0.0.1:10911"] and table.all_topics() == []
    register(table, addr="10.0.0.1:10911", topics=wrapper("T", counter=5), now=EXPIRY + 2)
    assert table.pick_topic_route("T") is not None


def test_expiry_by_time() -> None:
    table = two_clusters()
    assert table.scan_expired(now=EXPIRY) == []  # exactly at the limit is still alive
    register(table, cluster="c2", name="broker-b", addr="10.0.1.1:10911", topics=wrapper("T", queues=8), now=100)
    removed = table.scan_expired(now=EXPIRY + 1)
    assert sorted(r.broker_addr for r in removed) == ["10.0.0.1:10911", "10.0.0.2:10911"]
    assert all(r.broker_name == "broker-a" and r.cluster == "c1" for r in removed)
    assert {r.connection_id for r in removed} == {1, 2}
    route = table.pick_topic_route("T")
    assert route is not None and [b.broker_name for b in route.broker_datas] == ["broker-b"]
    assert [q.broker_name for q in route.queue_datas] == ["broker-b"]
    assert table.pick_topic_route("A-only") is None and "A-only" not in table.all_topics()
    assert table.cluster_info().cluster_addr_table == {"c2": ["broker-b"]}
    assert table.scan_expired(now=100 + EXPIRY + 1)[0].broker_addr == "10.0.1.1:10911"
    assert table.all_topics() == [] and table.cluster_info().broker_addr_table == {}


def test_removal_by_connection_is_immediate() -> None:
    table = two_clusters()
    removed = table.remove_by_connection(3)
    assert [(r.broker_name, r.broker_addr, r.cluster, r.group_removed) for r in removed] == [
        ("broker-b", "10.0.1.1:10911", "c2", True)
    ]
    route = table.pick_topic_route("T")
    assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-a"]
    assert "c2" not in table.cluster_info().cluster_addr_table
    assert table.remove_by_connection(3) == []


def test_queue_data_stays_while_a_slave_of_the_group_lives() -> None:
    table = two_clusters()
    [master] = table.remove_by_connection(1)
    assert not master.group_removed
    route = table.pick_topic_route("A-only")
    assert route is not None and route.broker_datas[0].broker_addrs == {1: "10.0.0.2:10911"}
    [slave] = table.remove_by_connection(2)
    assert slave.group_removed
    assert table.pick_topic_route("A-only") is None
    assert table.cluster_info().cluster_addr_table == {"c2": ["broker-b"]}


def test_topic_goes_when_its_last_broker_unregisters() -> None:
    table = RouteTable()
    register(table, name="broker-a", addr="10.0.0.1:10911", topics=wrapper("Shared", "A"))
    register(table, name="broker-b", addr="10.0.0.3:10911", topics=wrapper("Shared"))
    removed = table.unregister_broker(
        cluster="DefaultCluster", broker_addr="10.0.0.1:10911", broker_name="broker-a", broker_id=0
    )
    assert removed is not None and removed.group_removed
    assert table.all_topics() == ["Shared"]
    table.unregister_broker(cluster="DefaultCluster", broker_addr="10.0.0.3:10911", broker_name="broker-b", broker_id=0)
    assert table.all_topics() == [] and table.cluster_info() == table.cluster_info().__class__()
    assert table.unregister_broker(cluster="x", broker_addr="1.1.1.1:1", broker_name="ghost", broker_id=0) is None


def test_stale_unregister_does_not_remove_the_new_holder_of_the_id() -> None:
    table = RouteTable()
    register(table, addr="10.0.0.9:10911")
    table.unregister_broker(cluster="DefaultCluster", broker_addr="10.0.0.1:10911", broker_name="broker-a", broker_id=0)
    assert table.cluster_info().broker_addr_table["broker-a"].broker_addrs == {0: "10.0.0.9:10911"}


def test_same_address_under_a_new_id_replaces_the_old_entry() -> None:
    table = RouteTable()
    register(table, addr="10.0.0.2:10911", broker_id=1)
    register(table, addr="10.0.0.2:10911", broker_id=0)  # the slave became master
    assert table.cluster_info().broker_addr_table["broker-a"].broker_addrs == {0: "10.0.0.2:10911"}


def test_delete_topic_everywhere_or_per_cluster() -> None:
    table = two_clusters()
    assert table.delete_topic("T", "c2") is True
    route = table.pick_topic_route("T")
    assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-a"]
    assert table.delete_topic("T", "no-such-cluster") is False
    assert table.delete_topic("T") is True and table.pick_topic_route("T") is None
    assert table.delete_topic("T") is False
    # The next registration with an unchanged DataVersion does not bring it back.
    register(table, cluster="c1", name="broker-a", addr="10.0.0.1:10911", topics=wrapper("T", "A-only"), now=5)
    assert table.pick_topic_route("T") is None


def test_cluster_info_and_topics_by_cluster() -> None:
    table = two_clusters()
    info = table.cluster_info()
    assert info.cluster_addr_table == {"c1": ["broker-a"], "c2": ["broker-b"]}
    assert info.broker_addr_table["broker-a"].broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}
    assert info.broker_addr_table["broker-b"].cluster == "c2"
    assert sorted(table.topics_by_cluster("c1")) == ["A-only", "T"]
    assert table.topics_by_cluster("c2") == ["T"]
    assert table.topics_by_cluster("none") == []
    system = table.system_topics()
    assert system.topic_list == ["c1", "broker-a", "c2", "broker-b"] and system.broker_addr == "10.0.0.1:10911"


def test_filter_servers_appear_in_routes_until_cleared() -> None:
    table = RouteTable()
    register(table, filter_servers=["10.0.0.1:30000"])
    route = table.pick_topic_route("TopicTest")
    assert route is not None and route.filter_server_table == {"10.0.0.1:10911": ["10.0.0.1:30000"]}
    register(table, filter_servers=[], now=1)
    route = table.pick_topic_route("TopicTest")
    assert route is not None and route.filter_server_table == {}


def test_write_permission_wipe_and_restore() -> None:
    table = two_clusters()
    assert table.wipe_write_perm("broker-a") == 2
    route = table.pick_topic_route("T")
    assert route is not None and {q.broker_name: q.perm for q in route.queue_datas} == {"broker-a": 4, "broker-b": 6}
    assert table.add_write_perm("broker-a") == 2
    route = table.pick_topic_route("A-only")
    assert route is not None and route.queue_datas[0].perm == 6


def test_touch_keeps_a_broker_alive() -> None:
    table = RouteTable(broker_expiry_s=10)
    register(table, now=0)
    table.touch("10.0.0.1:10911", 8)
    assert table.scan_expired(now=15) == []
    live = table.live_info("10.0.0.1:10911")
    assert live is not None and live.last_update_s == 8
    assert len(table.scan_expired(now=18.5)) == 1


def test_unit_topic_flags() -> None:
    table = RouteTable()
    register(table, name="a", addr="1.0.0.1:1", topics=wrapper("unit", sys_flag=1))
    register(table, name="b", addr="1.0.0.2:1", topics=wrapper("sub", sys_flag=2))
    register(table, name="c", addr="1.0.0.3:1", topics=wrapper("both", sys_flag=3))
    assert sorted(table.topics_with_sys_flag(lambda f: bool(f & 1))) == ["both", "unit"]
    assert table.topics_with_sys_flag(lambda f: not f & 1 and bool(f & 2)) == ["sub"]
