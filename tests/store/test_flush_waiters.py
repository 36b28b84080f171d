"""SYNC_FLUSH waiting: event-loop waiters released per group commit, puts nobody waits for, closing."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from pathlib import Path

import pytest

from rocketq.store import FlushDiskType, MessageStore, StoreConfig
from rocketq.testing import wait_until

from .conftest import message, small_config


def sync_config(tmp_path: Path) -> StoreConfig:
    return small_config(tmp_path, mapped_file_size_commit_log=1 << 20, flush_disk_type=FlushDiskType.SYNC_FLUSH)


def test_loop_waiters_share_fsyncs_and_see_their_bytes_flushed(tmp_path: Path) -> None:
    """Puts from many coroutines: each is released only once an fsync covers its bytes, and no put costs
    more than one fsync. (How many puts one fsync covers here depends on when the flusher thread gets the
    CPU: on a loaded host 171 of 320 were seen. The sharing itself is the next test's, counted exactly.)"""
    writers, puts_each = 16, 20
    with MessageStore(sync_config(tmp_path)) as store:
        flushes_before = store.flusher.flush_count
        late: list[int] = []
        released_at: set[int] = set()

        async def writer() -> None:
            loop = asyncio.get_running_loop()
            for _ in range(puts_each):
                result = store.put_message(message(body=b"y" * 100))
                flushed = store.flushed_on_loop(result, loop)
                assert flushed is not None
                offset = await asyncio.wait_for(flushed, 10)
                released_at.add(offset)
                if offset < result.end_offset or store.commit_log.files.flushed_where < result.end_offset:
                    late.append(result.end_offset)

        async def main() -> None:
            await asyncio.gather(*(writer() for _ in range(writers)))

        asyncio.run(main())
        assert late == []
        fsyncs = store.flusher.flush_count - flushes_before
        # each fsync covers at least one put no fsync before it covered (puts are its only cause), and
        # releases its waiters with the one offset it reached
        assert 0 < len(released_at) <= fsyncs <= writers * puts_each


def test_one_fsync_releases_every_loop_waiter_it_covers(tmp_path: Path) -> None:
    """Waiters for 320 offsets, filed before the bytes are written, then one put reaching past them all:
    its one group commit releases them together, each with the offset it reached."""
    waiters = 320
    with MessageStore(sync_config(tmp_path)) as store:
        assert store.commit_log.max_offset == 0 and store.commit_log.files.flushed_where == 0  # nothing to flush

        async def main() -> tuple[list[int], int]:
            loop = asyncio.get_running_loop()
            waiting = [store.flusher.request_on_loop(offset, loop) for offset in range(1, waiters + 1)]
            assert not any(future.done() for future in waiting)
            result = store.put_messages([message(body=b"z" * 100) for _ in range(waiters)])
            assert result.ok and result.end_offset > waiters
            return list(await asyncio.wait_for(asyncio.gather(*waiting), 10)), result.end_offset

        flushes_before = store.flusher.flush_count
        released_at, end = asyncio.run(main())
        assert released_at == [end] * waiters
        assert store.flusher.flush_count - flushes_before == 1  # (a put asks for one fsync; this one was the only)


def test_a_sync_put_nobody_waits_for_is_flushed_promptly(tmp_path: Path) -> None:
    with MessageStore(sync_config(tmp_path)) as store:
        result = store.put_message(message(body=b"fire and forget"))
        # flushed although nobody waits for it (how soon is for benchmarks, not a timed test)
        wait_until(lambda: store.commit_log.files.flushed_where >= result.end_offset)


def test_an_already_flushed_put_resolves_at_once(tmp_path: Path) -> None:
    with MessageStore(sync_config(tmp_path)) as store:
        result = store.put_message_and_wait(message(body=b"first"))
        assert result.ok
        assert store.flusher.request(result.end_offset).done()

        async def check() -> None:
            flushed = store.flushed_on_loop(result, asyncio.get_running_loop())
            assert flushed is not None and flushed.done() and flushed.result() >= result.end_offset

        asyncio.run(check())


def test_waiters_left_at_close_get_an_error(tmp_path: Path) -> None:
    store = MessageStore(sync_config(tmp_path))
    store.start()
    beyond = store.commit_log.max_offset + 1_000_000  # an offset no fsync will reach

    async def wait_past_the_end() -> None:
        loop = asyncio.get_running_loop()
        waiting = store.flusher.request_on_loop(beyond, loop)
        thread_waiting: Future[int] = store.flusher.request(beyond)
        await asyncio.to_thread(store.close)
        with pytest.raises(RuntimeError, match="store closed"):
            await asyncio.wait_for(waiting, 5)
        with pytest.raises(RuntimeError, match="store closed"):
            thread_waiting.result(5)

    asyncio.run(wait_past_the_end())


def test_async_flush_has_nothing_to_wait_for(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path)) as store:

        async def check() -> None:
            result = store.put_message(message(body=b"x"))
            assert store.flushed_on_loop(result, asyncio.get_running_loop()) is None
            assert store.wait_flushed(result).ok

        asyncio.run(check())
