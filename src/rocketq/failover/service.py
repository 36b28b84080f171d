"""One broker's part in its group's automatic failover (docs/failover.md): it keeps an etcd lease, reports
its log's end under it, follows the master ``master`` names, and when there is none and it is the most
advanced live broker of the group, becomes master by a compare-and-set that starts the next epoch.

A master renews its lease every ``check_interval_s`` and takes writes only while the lease surely holds
(``may_write``: the broker's send path asks) and ``master`` still names it at its epoch; when either
fails it steps down and follows whoever etcd names next. etcd does the consensus: this module only
reads, renews and compare-and-sets. ``clock`` is the broker's (``time()`` for the lease deadline,
``sleep`` for the pace).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from dataclasses import dataclass
from typing import Protocol

import msgspec

from rocketq.broker.config import BrokerConfig
from rocketq.failover import etcd
from rocketq.failover.election import GroupKeys, LeaseDeadline, MasterRecord, ReplicaReport, most_advanced
from rocketq.failover.etcd import EtcdClient, EtcdError
from rocketq.remoting.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)


class Role(enum.Enum):
    FOLLOWER = "FOLLOWER"
    MASTER = "MASTER"


class GroupMember(Protocol):
    """What the service asks of its broker (``rocketq.broker.server.Broker``)."""

    def failover_report(self) -> tuple[int, int, str]:
        """(the last epoch in its log, where its log ends, its broker address)."""
        ...

    async def become_master(self, epoch: int) -> str:
        """Take writes in ``epoch``; returns its HA address."""
        ...

    async def become_slave(self, broker_address: str | None, ha_address: str | None) -> None:
        """Refuse writes; follow the master at those addresses (None: none known yet)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class FailoverSettings:
    broker_id: int  # this broker's own brokerId (the one it has as a slave)
    keys: GroupKeys
    lease_ttl_s: int = 3  # failoverLeaseTtl
    check_interval_s: float = 0.5  # failoverCheckInterval
    # a broker that is not the most advanced still runs for master once the group has had none this long
    # (the most advanced one reports but does not win: stuck, or partitioned from the group)
    takeover_after_s: float = 6.0


def failover_settings(config: BrokerConfig, broker_id: int) -> FailoverSettings:
    """The settings of broker ``broker_id`` (its own number) configured by ``config``."""
    return FailoverSettings(
        broker_id=broker_id,
        keys=GroupKeys.of(config.failover_etcd_prefix, config.broker_cluster_name, config.broker_name),
        lease_ttl_s=config.failover_lease_ttl,
        check_interval_s=config.failover_check_interval / 1000,
        takeover_after_s=2.0 * config.failover_lease_ttl,
    )


class FailoverService:
    def __init__(
        self, member: GroupMember, client: EtcdClient, settings: FailoverSettings, *, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self._member = member
        self._etcd = client
        self.settings = settings
        self._clock = clock
        self.role = Role.FOLLOWER
        self.epoch = 0  # the epoch this broker leads (while MASTER)
        self.lease = 0
        self._deadline = LeaseDeadline(margin_s=min(1.0, settings.lease_ttl_s / 3))
        self._lease_lost = False  # etcd said the lease is gone (the rounds take a new one)
        self._following: tuple[str, str] | None = None
        self._no_master_since: float | None = None
        self.promotions = 0  # times this broker became master
        self.demotions = 0  # times it stepped down
        self.changed = asyncio.Event()  # set at every change of role or master followed (tests wait on it)

    def may_write(self) -> bool:
        """Whether this broker may take a write now: it leads, and its lease surely holds."""
        return self.role is Role.MASTER and self._deadline.holds(self._clock.time())

    async def run(self) -> None:
        """Take part until cancelled; etcd errors are logged and retried every check interval."""
        failing: str | None = None
        keeper = asyncio.create_task(self._keep_lease_alive())
        try:
            while True:
                try:
                    await self._step()
                    if failing is not None:
                        log.info("failover: etcd answers again")
                        failing = None
                except (EtcdError, msgspec.DecodeError, ValueError) as exc:
                    if failing is None:
                        log.warning("failover: %s", exc)
                    failing = str(exc)
                except Exception:  # (a bug, a full disk while cutting the log): logged, tried again
                    log.exception("failover: a round failed")
                if self.role is Role.MASTER and not self.may_write():
                    await self._step_down("its lease can no longer be renewed")
                await self._clock.sleep(self.settings.check_interval_s)
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
            if self.lease:  # a clean stop hands the group over at once instead of after the TTL
                with contextlib.suppress(EtcdError):
                    await self._etcd.revoke(self.lease)

    # -- one round ------------------------------------------------------------------------------------

    async def _step(self) -> None:
        if self.lease and self._lease_lost:
            log.warning("failover: lease %x of broker %d expired", self.lease, self.settings.broker_id)
            self.lease, self._lease_lost = 0, False
            if self.role is Role.MASTER:
                await self._step_down("its lease expired")
        if not self.lease:
            now = self._clock.time()
            lease, ttl = await self._etcd.grant(self.settings.lease_ttl_s)
            self.lease, self._lease_lost = lease, False
            self._deadline.renewed(now, ttl)
        if self.role is Role.MASTER:
            await self._check_still_master()
        else:
            await self._follow_or_run()

    async def _keep_lease_alive(self) -> None:
        """Renew the lease a few times per TTL, apart from the rounds (a promotion may take a while)."""
        interval = min(self.settings.lease_ttl_s / 3, self.settings.check_interval_s * 2)
        while True:
            await self._clock.sleep(interval)
            lease = self.lease
            if not lease or self._lease_lost:
                continue
            sent_at = self._clock.time()
            try:
                ttl = await self._etcd.keep_alive(lease)
            except EtcdError:
                continue  # (the rounds log etcd's failures; the deadline runs out by itself)
            if lease != self.lease:
                continue
            if ttl > 0:
                self._deadline.renewed(sent_at, ttl)
            else:
                self._deadline.lost()
                self._lease_lost = True

    async def _report(self) -> None:
        epoch, max_offset, address = self._member.failover_report()
        report = ReplicaReport(broker_id=self.settings.broker_id, epoch=epoch, max_offset=max_offset, address=address)
        await self._etcd.put(self.settings.keys.replica(self.settings.broker_id), report.encode(), self.lease)

    async def _check_still_master(self) -> None:
        await self._report()  # a master reports where its log ends too (operators and followers read it)
        found = await self._etcd.get(self.settings.keys.master)
        record = MasterRecord.decode(found.value) if found is not None else None
        if record is None or record.broker_id != self.settings.broker_id or record.epoch != self.epoch:
            await self._step_down(f"etcd names {record} as master")
        elif not self.may_write():
            await self._step_down("its lease can no longer be renewed")

    async def _follow_or_run(self) -> None:
        keys = self.settings.keys
        await self._report()
        found = await self._etcd.get(keys.master)
        if found is not None:
            self._no_master_since = None
            record = MasterRecord.decode(found.value)
            if record.broker_id == self.settings.broker_id:  # its own, from before a restart: wait for it to expire
                return
            if record.ha_address and self._following != (record.address, record.ha_address):
                log.info(
                    "failover: following broker %d at %s (epoch %d)", record.broker_id, record.address, record.epoch
                )
                self._following = (record.address, record.ha_address)
                await self._member.become_slave(record.address, record.ha_address)
                self.changed.set()
            return
        now = self._clock.time()
        if self._no_master_since is None:
            self._no_master_since = now
            log.warning("failover: group %s has no master", keys.prefix.decode())
            return  # (one more round: every live broker reports its end first)
        reports = []
        for item in await self._etcd.get_prefix(keys.replicas):
            with contextlib.suppress(msgspec.DecodeError):
                reports.append(ReplicaReport.decode(item.value))
        best = most_advanced(reports)
        waited = now - self._no_master_since
        if best is not None and best.broker_id != self.settings.broker_id and waited < self.settings.takeover_after_s:
            return
        await self._run_for_master()

    async def _run_for_master(self) -> None:
        keys, settings = self.settings.keys, self.settings
        found = await self._etcd.get(keys.epoch)
        handed_out = int(found.value) if found is not None else 0
        own_epoch, _, address = self._member.failover_report()
        epoch = max(handed_out, own_epoch) + 1
        record = MasterRecord(broker_id=settings.broker_id, epoch=epoch, address=address)
        won = await self._etcd.txn(
            [etcd.absent(keys.master), etcd.modified_at(keys.epoch, found.mod_revision if found else 0)],
            [etcd.put(keys.master, record.encode(), self.lease), etcd.put(keys.epoch, str(epoch).encode())],
        )
        if not won:
            return
        log.warning(
            "failover: broker %d becomes master of %s in epoch %d", settings.broker_id, keys.prefix.decode(), epoch
        )
        self.epoch, self._following, self._no_master_since = epoch, None, None
        try:
            ha_address = await self._member.become_master(epoch)
        except Exception:
            log.exception("failover: broker %d could not start as master", settings.broker_id)
            await self._step_down("it could not start as master")
            return
        self.role = Role.MASTER  # (writes are taken from here on, while the lease holds)
        self.promotions += 1
        ready = msgspec.structs.replace(record, ha_address=ha_address)
        if not await self._etcd.txn(
            [etcd.value_is(keys.master, record.encode())], [etcd.put(keys.master, ready.encode(), self.lease)]
        ):
            await self._step_down("its master record changed while it started")
        self.changed.set()

    async def _step_down(self, why: str) -> None:
        log.warning(
            "failover: broker %d steps down as master of epoch %d: %s", self.settings.broker_id, self.epoch, why
        )
        self._deadline.lost()  # (fenced from here on: no write is taken)
        self._following = None
        self.demotions += 1
        lease, self.lease = self.lease, 0  # (the master record goes with it; a new lease is taken for reports)
        self._lease_lost = False
        if lease:
            with contextlib.suppress(EtcdError):
                await self._etcd.revoke(lease)
        await self._member.become_slave(None, None)
        self.role = Role.FOLLOWER
        self.changed.set()
