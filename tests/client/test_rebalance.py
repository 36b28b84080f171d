"""Allocation strategies (pure): every member computes its share alone, and the shares partition."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.message import MessageQueue
from rocketq.client.rebalance import STRATEGIES, allocate_averagely, allocate_averagely_by_circle, consistent_hash


def queues(count: int) -> list[MessageQueue]:
    return sorted(MessageQueue("T", f"broker-{i // 4}", i % 4) for i in range(count))


def test_averagely_matches_rocketmq_examples() -> None:
    four = queues(4)
    assert [q.queue_id for q in allocate_averagely("c0", four, ["c0", "c1"])] == [0, 1]
    assert [q.queue_id for q in allocate_averagely("c1", four, ["c0", "c1"])] == [2, 3]
    three = ["a", "b", "c"]
    assert [[q.queue_id for q in allocate_averagely(c, four, three)] for c in three] == [[0, 1], [2], [3]]
    assert allocate_averagely("stranger", four, three) == []
    assert allocate_averagely("a", queues(2), [*three, "d"]) == [queues(2)[0]]


def test_by_circle_deals_like_cards() -> None:
    eight = queues(8)
    assert allocate_averagely_by_circle("b", eight, ["a", "b", "c"]) == [eight[1], eight[4], eight[7]]


def test_consistent_hash_moves_few_queues_when_a_member_joins() -> None:
    allocate = consistent_hash(virtual_nodes=50)
    many = queues(64)
    before = {c: set(allocate(c, many, ["a", "b", "c"])) for c in "abc"}
    after = {c: set(allocate(c, many, ["a", "b", "c", "d"])) for c in "abcd"}
    moved = sum(len(before[c] - after[c]) for c in "abc")
    assert moved == len(after["d"]) and moved < 32  # only what the newcomer takes moves


@given(
    st.integers(0, 40),
    st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=9, unique=True),
    st.sampled_from(sorted(STRATEGIES)),
)
def test_every_strategy_partitions_the_queues(count: int, clients: list[str], name: str) -> None:
    allocate = STRATEGIES[name]
    everyone = sorted(clients)
    shares = [allocate(client, queues(count), everyone) for client in everyone]
    owned = [q for share in shares for q in share]
    assert sorted(owned) == queues(count)  # every queue once, none twice
    if name != "CONSISTENT_HASH":
        sizes = [len(share) for share in shares]
        assert max(sizes) - min(sizes) <= 1  # balanced
