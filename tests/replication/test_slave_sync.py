"""A slave copies its master's topics, consumer offsets, delay offsets and subscription groups (as
RocketMQ's SlaveSynchronize does), on the schedule of an injected clock."""

from __future__ import annotations

from pathlib import Path

from rocketq.broker.subscription_groups import SubscriptionGroupConfig
from rocketq.protocol import TopicConfig
from rocketq.testing import FakeClock, LocalCluster, eventually


async def test_a_slave_takes_its_masters_metadata(tmp_path: Path) -> None:
    clock = FakeClock()
    async with LocalCluster(tmp_path, clock=clock) as cluster:
        master = cluster.brokers[0]
        slave = await cluster.start_slave(0)
        assert slave.slave_sync is not None
        assert slave.slave_sync.master_address == master.address  # from the NameServer's answer
        master.topics.put(TopicConfig(topic_name="Synced", read_queue_nums=3, write_queue_nums=3))
        master.offsets.commit("G", "Synced", 2, 42)
        master.groups.put(SubscriptionGroupConfig(group_name="G", retry_max_times=5))
        assert master.schedule is not None
        master.schedule.offsets[3] = 17
        clock.advance(3)  # the first round comes 3 s after the start
        await eventually(lambda: slave.slave_sync is not None and slave.slave_sync.rounds >= 1, what="a round")
        assert slave.topics.get("Synced") == master.topics.get("Synced")
        assert slave.offsets.query("G", "Synced", 2) == 42
        group = slave.groups.table.get("G")
        assert group is not None and group.retry_max_times == 5
        assert slave.schedule is not None and slave.schedule.offsets == {3: 17}
        master.offsets.commit("G", "Synced", 2, 50)
        clock.advance(10)  # and every 10 s
        await eventually(lambda: slave.offsets.query("G", "Synced", 2) == 50, what="the next round")
