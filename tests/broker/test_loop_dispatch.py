"""The broker's puts on its loop: dispatching an iteration's puts together, waiting for group commits."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rocketq.broker.grouped_puts import GroupedPuts
from rocketq.broker.loop_dispatch import FlushWaits, LoopDispatch
from rocketq.common.offsets import PhysicalOffset
from rocketq.store import FlushDiskType, MessageStore, MessageToStore, PutMessageResult, PutStatus, StoreConfig
from rocketq.testing import FakeClock


def store_config(root: Path, **overrides: object) -> StoreConfig:
    settings: dict[str, object] = {
        "store_path_root_dir": root,
        "mapped_file_size_commit_log": 1 << 20,
        "flush_disk_type": FlushDiskType.SYNC_FLUSH,
        **overrides,
    }
    return StoreConfig(**settings)  # type: ignore[arg-type]


def one(body: bytes) -> MessageToStore:
    return MessageToStore(topic="LoopTopic", queue_id=0, body=body)


def test_puts_of_one_iteration_are_dispatched_and_flushed(tmp_path: Path) -> None:
    with MessageStore(store_config(tmp_path)) as store:

        async def main() -> list[PutMessageResult]:
            dispatch = LoopDispatch(store, asyncio.get_running_loop())

            async def put(index: int) -> PutMessageResult:
                result = store.put_messages((one(b"m%d" % index),), dispatch=False)
                dispatch.request()
                return await FlushWaits(store).wait(result)

            results = await asyncio.gather(*(put(i) for i in range(24)))
            # every put is visible to readers by the time its fsync is acknowledged
            assert store.get_max_offset_in_queue("LoopTopic", 0) == 24
            return list(results)

        results = asyncio.run(main())
        assert [result.status for result in results] == [PutStatus.PUT_OK] * 24
        assert store.commit_log.files.flushed_where >= max(result.end_offset for result in results)
        found = store.get_messages("LoopTopic", 0, 0, 100)
        try:
            assert found.message_count == 24
        finally:
            found.release()


def test_a_group_commit_that_never_comes_times_out(tmp_path: Path) -> None:
    with MessageStore(store_config(tmp_path, sync_flush_timeout_ms=50)) as store:
        beyond = store.commit_log.max_offset + 1_000_000
        unreachable = PutMessageResult(status=PutStatus.PUT_OK, physical_offsets=[PhysicalOffset(beyond)], sizes=[100])

        async def main() -> PutStatus:
            return (await FlushWaits(store).wait(unreachable)).status

        assert asyncio.run(main()) is PutStatus.FLUSH_DISK_TIMEOUT


def test_async_flush_puts_do_not_wait(tmp_path: Path) -> None:
    with MessageStore(store_config(tmp_path, flush_disk_type=FlushDiskType.ASYNC_FLUSH)) as store:

        async def main() -> PutStatus:
            result = store.put_messages((one(b"x"),), dispatch=False)
            return (await FlushWaits(store).wait(result)).status

        assert asyncio.run(main()) is PutStatus.PUT_OK


async def settle() -> None:
    """Let the loop run every callback a clock's advance woke (a few turns each)."""
    for _ in range(20):
        await asyncio.sleep(0)


def test_one_timer_serves_waits_of_different_ages(tmp_path: Path) -> None:
    """Waits started at different times each time out on their own deadline on the waits' clock, while
    a put that is flushed in between succeeds; the shared timer re-arms for the next deadline."""
    clock = FakeClock(start=1000.0)  # (binary fractions below: the deadlines are exact)
    with MessageStore(store_config(tmp_path, sync_flush_timeout_ms=250)) as store:
        beyond = store.commit_log.max_offset + 1_000_000
        waits = FlushWaits(store, clock=clock)

        def unreachable() -> PutMessageResult:
            return PutMessageResult(status=PutStatus.PUT_OK, physical_offsets=[PhysicalOffset(beyond)], sizes=[1])

        def status(wait: asyncio.Future[PutMessageResult]) -> PutStatus | None:
            return wait.result().status if wait.done() else None

        async def main() -> None:
            first = asyncio.ensure_future(waits.wait(unreachable()))  # deadline 1000.25
            await settle()
            clock.advance(0.125)
            flushed = store.put_messages((one(b"x"),), dispatch=False)
            second = asyncio.ensure_future(waits.wait(flushed))  # deadline 1000.375, flushed before
            third = asyncio.ensure_future(waits.wait(unreachable()))  # deadline 1000.375
            assert (await asyncio.wait_for(second, 30)).status is PutStatus.PUT_OK  # (a liveness bound)
            await settle()
            assert (status(first), status(third)) == (None, None)
            clock.advance(0.0625)  # 1000.1875
            await settle()
            assert (status(first), status(third)) == (None, None)
            clock.advance(0.0625)  # 1000.25: the first's deadline
            await settle()
            assert (status(first), status(third)) == (PutStatus.FLUSH_DISK_TIMEOUT, None)
            clock.advance(0.0625)  # 1000.3125
            await settle()
            assert status(third) is None
            clock.advance(0.0625)  # 1000.375: the third's deadline
            await settle()
            assert status(third) is PutStatus.FLUSH_DISK_TIMEOUT

        asyncio.run(main())


def test_grouped_puts_share_one_append_and_one_fsync(tmp_path: Path) -> None:
    """Single-message puts of one loop iteration are appended as one batch: each caller gets the
    offsets of its own message, and one fsync covers them all."""
    with MessageStore(store_config(tmp_path)) as store:
        fsyncs_before = store.flusher.flush_count

        async def main() -> list[PutMessageResult]:
            dispatch = LoopDispatch(store, asyncio.get_running_loop())
            puts = GroupedPuts(store, dispatch, FlushWaits(store))
            return list(await asyncio.gather(*(puts.put_and_wait((one(b"g%d" % i),)) for i in range(24))))

        results = asyncio.run(main())
        assert [result.status for result in results] == [PutStatus.PUT_OK] * 24
        assert [result.queue_offsets for result in results] == [[i] for i in range(24)]
        for i, result in enumerate(results):
            record = store.lookup_message(result.physical_offsets[0])
            assert record is not None and record.body == b"g%d" % i
            assert result.wrote_bytes == result.sizes[0] == record.total_size
        assert store.flusher.flush_count - fsyncs_before == 1


def test_a_refused_message_does_not_fail_the_rest_of_its_group(tmp_path: Path) -> None:
    with MessageStore(store_config(tmp_path)) as store:
        too_long = MessageToStore(topic="LoopTopic", queue_id=0, body=b"x", properties="k\x01" + "v" * 40_000)

        async def main() -> list[PutMessageResult]:
            puts = GroupedPuts(store, LoopDispatch(store, asyncio.get_running_loop()), FlushWaits(store))
            calls = [puts.put_and_wait((one(b"a"),)), puts.put_and_wait((too_long,)), puts.put_and_wait((one(b"b"),))]
            return list(await asyncio.gather(*calls))

        first, refused, last = asyncio.run(main())
        assert (first.status, refused.status, last.status) == (
            PutStatus.PUT_OK,
            PutStatus.PROPERTIES_SIZE_EXCEEDED,
            PutStatus.PUT_OK,
        )
        assert store.get_max_offset_in_queue("LoopTopic", 0) == 2


def test_a_put_that_does_not_join_the_group_keeps_the_send_order(tmp_path: Path) -> None:
    with MessageStore(store_config(tmp_path)) as store:

        async def main() -> list[PutMessageResult]:
            puts = GroupedPuts(store, LoopDispatch(store, asyncio.get_running_loop()), FlushWaits(store))
            waiting = asyncio.ensure_future(puts.put_and_wait((one(b"first"),)))
            await asyncio.sleep(0)  # the waiting put has joined the group
            puts.put_pending()  # what a put that does not wait does before its own append
            second = store.put_messages((one(b"second"),), dispatch=False)
            return [await waiting, second]

        first, second = asyncio.run(main())
        assert first.queue_offsets == [0] and second.queue_offsets == [1]
