"""The pure rules of failover: who runs for master, until when a master may write, the group's keys."""

from __future__ import annotations

from rocketq.failover.election import GroupKeys, LeaseDeadline, MasterRecord, ReplicaReport, most_advanced


def report(broker_id: int, epoch: int, max_offset: int) -> ReplicaReport:
    return ReplicaReport(broker_id=broker_id, epoch=epoch, max_offset=max_offset, address=f"h:{broker_id}")


def test_the_longest_log_of_the_newest_epoch_wins() -> None:
    assert most_advanced([report(1, 2, 500), report(2, 2, 900), report(3, 2, 700)]) == report(2, 2, 900)


def test_a_returning_former_master_loses_whatever_its_length() -> None:
    assert most_advanced([report(1, 1, 5000), report(2, 2, 900)]) == report(2, 2, 900)


def test_ties_go_to_the_lowest_broker_id_and_nobody_wins_an_empty_group() -> None:
    assert most_advanced([report(3, 2, 900), report(2, 2, 900)]) == report(2, 2, 900)
    assert most_advanced([]) is None


def test_a_master_stops_writing_before_its_lease_can_lapse() -> None:
    deadline = LeaseDeadline(margin_s=0.5)
    assert not deadline.holds(100.0)
    deadline.renewed(sent_at=100.0, ttl_s=3)  # etcd renewed it no earlier than it was asked to
    assert deadline.holds(102.4) and not deadline.holds(102.5)
    deadline.renewed(sent_at=99.0, ttl_s=3)  # a late answer to an older renewal does not shorten it
    assert deadline.holds(102.4)
    deadline.renewed(sent_at=102.0, ttl_s=0)  # etcd says the lease is gone
    assert not deadline.holds(102.1)
    deadline.renewed(sent_at=103.0, ttl_s=3)
    deadline.lost()
    assert not deadline.holds(103.0)


def test_keys_and_records() -> None:
    keys = GroupKeys.of("/rocketq/", "DefaultCluster", "broker-a")
    assert keys.master == b"/rocketq/DefaultCluster/broker-a/master"
    assert keys.epoch == b"/rocketq/DefaultCluster/broker-a/epoch"
    assert keys.replica(2) == b"/rocketq/DefaultCluster/broker-a/replicas/2"
    record = MasterRecord(broker_id=2, epoch=5, address="10.0.0.2:10911", ha_address="10.0.0.2:10912")
    assert MasterRecord.decode(record.encode()) == record
    assert b'"haAddress"' in record.encode() and b'"brokerId"' in record.encode()
