"""A broker's roles: a master serves slaves, runs the delay scheduler and the transaction check-back; a
slave follows its master (HA client) and copies its metadata. ``BrokerRoles`` (the base class of
``rocketq.broker.server.Broker``, on ``rocketq.broker.broker_parts.BrokerParts``) starts the tasks of the
role a broker has and, with failover, changes it: ``become_master`` and ``become_slave``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from rocketq.broker.broker_parts import BrokerParts
from rocketq.broker.config import BrokerRole
from rocketq.broker.ha_parts import new_ha_slave, start_ha_master
from rocketq.remoting.tasks import cancel_and_wait
from rocketq.replication import HAMaster, HASlave
from rocketq.replication.sync import SlaveSynchronize

log = logging.getLogger(__name__)


class BrokerRoles(BrokerParts):
    """Starting, stopping and changing a broker's role (its HA service, scheduler, check-back, slave sync)."""

    def _on_master(self, ha_address: str, broker_address: str) -> None:
        """A slave's registration named its master: follow it (unless ``haMasterAddress`` says where, or
        failover does: etcd, not the NameServer, says who leads then)."""
        if self.failover is not None or self.config.failover_enable:
            return
        if self.ha_slave is not None and not self.config.ha_master_address:
            self.ha_slave.set_master(ha_address, broker_address or None)
        if self.slave_sync is not None and broker_address:
            self.slave_sync.master_address = broker_address

    def _new_ha_slave(self) -> HASlave:
        return new_ha_slave(self.config, self.store, self.clock, lambda: self._client)

    def _new_slave_sync(self) -> SlaveSynchronize:
        assert self._client is not None
        return SlaveSynchronize(
            self._client,
            topics=self.topics,
            offsets=self.offsets,
            groups=self.groups,
            set_delay_offsets=self._take_delay_offsets,
            clock=self.clock,
        )

    async def _start_ha_master(self) -> HAMaster:
        return await start_ha_master(self.config, self.store, self.clock)

    def _replicas(self) -> HAMaster | None:
        """What a put waits for besides its fsync: a SYNC_MASTER's slaves."""
        return self.ha_master if self.config.broker_role is BrokerRole.SYNC_MASTER else None

    def _offer_slaves(self) -> None:
        """Tell the pull path whether a slave can take this master's readers."""
        assert self.context is not None
        ha_master, commit_log = self.ha_master, self.store.commit_log
        if ha_master is None:
            self.context.slave_available = lambda: False
        else:
            self.context.slave_available = lambda: ha_master.available(commit_log.max_offset)

    def _start_role_tasks(self) -> None:
        """A master runs the delay scheduler and the transaction check-back; a slave (whose store is
        written by its master only) follows its master and copies its metadata."""
        assert self.schedule is not None and self.transaction_checks is not None
        loop = asyncio.get_running_loop()
        if self.ha_slave is None:
            work = [self.schedule.run(), self.transaction_checks.run()]
        else:
            assert self.slave_sync is not None
            work = [self.ha_slave.run(), self.slave_sync.run()]
        for coroutine in work:
            task = loop.create_task(coroutine)
            task.add_done_callback(self._task_done)
            self._role_tasks.append(task)

    async def _stop_role_tasks(self) -> None:
        await cancel_and_wait(self._role_tasks, ignore_errors=True)
        self._role_tasks.clear()

    def failover_report(self) -> tuple[int, int, str]:
        """For failover: the last epoch in this broker's log, where the log ends, its address."""
        return self.store.epochs.last_epoch, self.store.commit_log.max_offset, self.address

    async def become_master(self, epoch: int) -> str:
        """Failover made this broker its group's master in ``epoch``: stop following, start ``epoch`` at
        the end of the log, take writes (as brokerId 0, ``master_role``), serve slaves. Returns the HA
        address its slaves connect to."""
        assert self.context is not None and self.registrar is not None
        await self._stop_role_tasks()
        self.ha_slave = self.slave_sync = None
        self.store.epochs.begin(epoch, self.store.start_writing())
        self.config = self.context.config = dataclasses.replace(self.config, broker_role=self.master_role, broker_id=0)
        if self.schedule is not None:
            self.schedule.load()  # (the offsets it copied from its former master)
        self.ha_master = await self._start_ha_master()
        self.context.flush_waits.set_replicas(self._replicas())
        self._offer_slaves()
        self._start_role_tasks()
        self.registrar.ha_address = self.ha_address
        self._spawn(self._register_as(was=self.own_broker_id))
        log.warning("broker %s is master (epoch %d) at %s", self.config.broker_name, epoch, self.address)
        return self.ha_address

    async def become_slave(self, broker_address: str | None, ha_address: str | None) -> None:
        """Failover names another master (None: none yet): stop taking writes, stop serving slaves,
        follow it (cutting this log back first where it parts from the master's)."""
        assert self.context is not None and self.registrar is not None
        was_master = not self.config.is_slave
        if was_master:
            self.config = self.context.config = dataclasses.replace(
                self.config, broker_role=BrokerRole.SLAVE, broker_id=self.own_broker_id
            )
            self.context.flush_waits.set_replicas(None)
            await self._stop_role_tasks()
            if self.ha_master is not None:
                await self.ha_master.aclose()
                self.ha_master = None
            self._offer_slaves()
            self.registrar.ha_address = ""
            log.warning("broker %s is no longer master", self.config.broker_name)
        if self.ha_slave is None:
            self.ha_slave, self.slave_sync = self._new_ha_slave(), self._new_slave_sync()
            self._start_role_tasks()
        assert self.slave_sync is not None
        self.ha_slave.set_master(ha_address, broker_address)
        self.slave_sync.master_address = broker_address
        if was_master:
            self._spawn(self._register_as(was=0))

    async def _register_as(self, *, was: int) -> None:
        """Registration after a change of role: off the NameServers as brokerId ``was``, on as now."""
        assert self.registrar is not None
        await self.registrar.unregister_all(was)
        await self.registrar.register_all()

    def _take_delay_offsets(self, offsets: dict[int, int]) -> None:
        if self.schedule is not None and offsets != self.schedule.offsets:
            self.schedule.offsets = offsets
            self.schedule.persist()
