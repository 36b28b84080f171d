"""A slave's look at its master's epochs before it follows it (docs/failover.md#epochs-and-truncation).

The slave asks its master's broker port for GET_EPOCH_ENTRIES (rocketq-only, 9040): the master's epoch
entries, its CommitLog end and whether it is a master. ``reconcile`` compares them with the slave's own
entries (``rocketq.store.epochs.common_offset``): a log that went on past the point where the two
histories part (a former master's writes no slave got) is cut back there (``MessageStore.truncate_to``)
before the slave appends a byte of its new master's; then the slave takes its master's entries as its
own, since the bytes it will hold are that master's.
"""

from __future__ import annotations

import logging

import msgspec

from rocketq.protocol import RequestCode, ResponseCode, make_request
from rocketq.remoting import RemotingClient, RemotingError
from rocketq.remoting.connection import next_opaque
from rocketq.store import MessageStore
from rocketq.store.epochs import EpochEntry, common_offset, entries_up_to

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 3.0


class EpochAnswer(msgspec.Struct, rename="camel", kw_only=True):
    """GET_EPOCH_ENTRIES' body (JSON): ``entries`` as ``[epoch, startOffset]`` pairs, oldest first."""

    entries: list[tuple[int, int]]
    max_offset: int
    master: bool

    def encode(self) -> bytes:
        return msgspec.json.encode(self)

    @property
    def epoch_entries(self) -> list[EpochEntry]:
        return [EpochEntry(epoch, start) for epoch, start in self.entries]


class NotAMaster(RemotingError):
    """The broker asked for its epochs is no master (it was demoted, or the route is stale)."""


async def fetch_epochs(client: RemotingClient, address: str) -> EpochAnswer:
    """Ask the broker at ``address`` for its epoch entries.

    Raises:
        RemotingError: It cannot be reached or refused (NotAMaster: it is not a master).
        msgspec.DecodeError: Its answer is no EpochAnswer.
    """
    request = make_request(RequestCode.GET_EPOCH_ENTRIES, opaque=next_opaque())
    response = await client.invoke(address, request, REQUEST_TIMEOUT_S)
    if response.code != ResponseCode.SUCCESS:
        raise RemotingError(f"broker {address} answered GET_EPOCH_ENTRIES with {response.code}: {response.remark}")
    answer = msgspec.json.decode(bytes(response.body or b""), type=EpochAnswer)
    if not answer.master:
        raise NotAMaster(f"broker {address} is not a master")
    return answer


def reconcile(store: MessageStore, master: EpochAnswer) -> int | None:
    """Cut ``store``'s log back to where it parts from ``master``'s (the offset it was cut to; None
    when nothing was cut), then take the master's entries as the store's. Runs on the caller's
    thread (the broker's loop, as ``truncate_to`` asks)."""
    remote = master.epoch_entries
    local_end = store.commit_log.max_offset
    shared = common_offset(store.epochs.entries, local_end, remote, master.max_offset)
    cut_to: int | None = None
    if shared is not None and shared < local_end:
        log.warning(
            "slave: this log (to %d, epochs %s) parts from its master's (to %d, epochs %s) at %d: cutting it back",
            local_end,
            store.epochs.entries,
            master.max_offset,
            remote,
            shared,
        )
        cut_to = store.truncate_to(shared)
    adopted = entries_up_to(remote, master.max_offset)
    if adopted != store.epochs.entries:
        store.epochs.replace(adopted)
    return cut_to
