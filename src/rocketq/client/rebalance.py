"""Queue allocation strategies (pure): which queues of a topic this consumer takes, given every
queue and every member of the group, both sorted. Every member computes the same answer alone."""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Sequence

from rocketq.client.message import MessageQueue

AllocateStrategy = Callable[[str, Sequence[MessageQueue], Sequence[str]], list[MessageQueue]]
"""(this client's id, all queues sorted, all client ids sorted) -> this client's queues."""


def allocate_averagely(client_id: str, queues: Sequence[MessageQueue], clients: Sequence[str]) -> list[MessageQueue]:
    """Contiguous blocks; the first ``n % c`` members get one queue more (AllocateMessageQueueAveragely)."""
    if client_id not in clients or not queues:
        return []
    index = list(clients).index(client_id)
    n, c = len(queues), len(clients)
    mod = n % c
    if n <= c:
        size = 1
    elif mod > 0 and index < mod:
        size = n // c + 1
    else:
        size = n // c
    start = index * size if mod > 0 and index < mod else index * size + mod
    count = min(size, n - start)
    return [queues[(start + i) % n] for i in range(max(0, count))]


def allocate_averagely_by_circle(
    client_id: str, queues: Sequence[MessageQueue], clients: Sequence[str]
) -> list[MessageQueue]:
    """Deal queues out like cards: member i gets queues i, i+c, i+2c, ..."""
    if client_id not in clients:
        return []
    index = list(clients).index(client_id)
    return [queue for position, queue in enumerate(queues) if position % len(clients) == index]


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.md5(text.encode(), usedforsecurity=False).digest()[:8], "big")


def consistent_hash(virtual_nodes: int = 10) -> AllocateStrategy:
    """Each member owns the ring arcs before its virtual nodes; a join or leave moves few queues."""

    def allocate(client_id: str, queues: Sequence[MessageQueue], clients: Sequence[str]) -> list[MessageQueue]:
        if client_id not in clients:
            return []
        ring = sorted((_hash(f"{client}#{i}"), client) for client in clients for i in range(virtual_nodes))
        points = [point for point, _ in ring]
        owned = []
        for queue in queues:
            at = bisect.bisect_left(points, _hash(str(queue))) % len(ring)
            if ring[at][1] == client_id:
                owned.append(queue)
        return owned

    return allocate


STRATEGIES: dict[str, AllocateStrategy] = {
    "AVG": allocate_averagely,
    "AVG_BY_CIRCLE": allocate_averagely_by_circle,
    "CONSISTENT_HASH": consistent_hash(),
}
