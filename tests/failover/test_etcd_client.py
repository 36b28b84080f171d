"""The etcd client against a real etcd: keys, prefixes, compare-and-set transactions and leases."""

from __future__ import annotations

import asyncio

from rocketq.failover import etcd as e
from rocketq.failover.etcd import EtcdClient, prefix_end
from rocketq.testing.etcd import EtcdServer


def test_prefix_end() -> None:
    assert prefix_end(b"/a/") == b"/a0"
    assert prefix_end(b"a\xff") == b"b"
    assert prefix_end(b"\xff") == b"\0"


async def test_keys_and_compare_and_set(etcd: EtcdServer) -> None:
    async with EtcdClient(["http://127.0.0.1:1", etcd.endpoint]) as client:  # the first is never up
        assert await client.get(b"/g/master") is None
        assert await client.txn([e.absent(b"/g/master")], [e.put(b"/g/master", b"one")])
        assert not await client.txn([e.absent(b"/g/master")], [e.put(b"/g/master", b"two")])
        found = await client.get(b"/g/master")
        assert found is not None and found.value == b"one"
        assert not await client.txn([e.modified_at(b"/g/master", found.mod_revision + 1)], [e.delete(b"/g/master")])
        await client.put(b"/g/x/1", b"a")
        await client.put(b"/g/x/2", b"b")
        await client.put(b"/g/y", b"c")
        assert [kv.value for kv in await client.get_prefix(b"/g/x/")] == [b"a", b"b"]
        assert await client.txn([e.value_is(b"/g/master", b"one")], [e.delete(b"/g/master")])
        assert await client.get(b"/g/master") is None


async def test_a_lease_not_kept_alive_takes_its_keys_away(etcd: EtcdServer) -> None:
    async with EtcdClient([etcd.endpoint]) as client:
        lease, ttl = await client.grant(2)
        assert ttl == 2
        await client.put(b"/l/k", b"v", lease)
        assert await client.keep_alive(lease) == 2
        found = await client.get(b"/l/k")
        assert found is not None and found.lease == lease
        await client.revoke(lease)
        assert await client.get(b"/l/k") is None
        assert await client.keep_alive(lease) == 0
        short, _ = await client.grant(1)
        await client.put(b"/l/short", b"v", short)
        async with asyncio.timeout(10):  # etcd expires it on its own clock
            while await client.get(b"/l/short") is not None:
                await asyncio.sleep(0.1)
