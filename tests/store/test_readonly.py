"""StoreReader: a store's queues read back exactly, without touching a file; only complete entries and
sound records; damage, aged-out data, a torn tail and an empty store each get their own answer."""

from __future__ import annotations

import hashlib
import itertools
import shutil
import threading
from pathlib import Path

import pytest

from rocketq.common.record import HEAD_SIZE
from rocketq.common.record_arrow import BODY, WIDE, FilledColumns
from rocketq.store import MessageStore
from rocketq.store.consume_queue import ENTRY, ENTRY_SIZE
from rocketq.store.readonly import DamagedRecordError, DataAgedOutError, StoreReader

from .conftest import message, small_config

TOPICS = ("TopicA", "TopicB")


def body(topic: str, queue_id: int, offset: int) -> bytes:
    return f"{topic}/{queue_id}/{offset}".encode() * (1 + offset % 5)


def write(store: MessageStore, per_queue: int, queues: int = 3, first: int = 0) -> None:
    for offset in range(first, first + per_queue):
        for topic in TOPICS:
            for queue_id in range(queues):
                assert store.put_message(message(topic, queue_id, body(topic, queue_id, offset), TAGS="t")).ok
    store.dispatch_now()


@pytest.fixture
def written(tmp_path: Path) -> Path:
    """A closed store: 2 topics x 3 queues x 40 messages; 4 KiB CommitLog and 16-entry ConsumeQueue files."""
    with MessageStore(small_config(tmp_path / "store")) as store:
        write(store, 40)
    return tmp_path / "store"


def read_all(reader: StoreReader, topic: str, queue_id: int, **options: bool) -> tuple[list[int], list[bytes]]:
    """The queue's offsets and bodies, by ``read``; checked to be the same in chunks of other sizes."""
    low, high = reader.offset_range(topic, queue_id)
    offsets, found = read_range(reader, topic, queue_id, low, high, max_records=7, **options)
    assert read_range(reader, topic, queue_id, low, high, max_records=5, max_bytes=600, **options) == (offsets, found)
    return offsets, found


def read_range(
    reader: StoreReader, topic: str, queue_id: int, low: int, high: int, **options: int | bool
) -> tuple[list[int], list[bytes]]:
    offsets: list[int] = []
    found: list[bytes] = []
    limit = int(options.get("max_records", 16384))
    for chunk in reader.read(topic, queue_id, low, high, **options):  # type: ignore[arg-type]
        assert 0 < chunk.count <= limit
        offsets.extend(queue_offsets_of(chunk))
        ends = chunk.offsets[BODY].tolist()
        found.extend(bytes(chunk.values[BODY][a:b]) for a, b in itertools.pairwise(ends))
    return offsets, found


def queue_offsets_of(gathered: FilledColumns) -> list[int]:
    offsets: list[int] = gathered.wide[WIDE.index("queueOffset")].tolist()
    return offsets


def snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    return {
        str(path.relative_to(root)): (
            path.stat().st_size,
            path.stat().st_mtime_ns,
            hashlib.sha1(path.read_bytes()).hexdigest(),
        )
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_every_queue_reads_back_exactly_and_no_file_changes(written: Path) -> None:
    before = snapshot(written)
    with StoreReader(written) as reader:
        assert reader.topics() == sorted(TOPICS)
        assert reader.queue_ids("TopicA") == [0, 1, 2]
        files = reader.queue_files("TopicA", 1)
        assert [f.first_offset for f in files] == [0, 16, 32] and {f.entries for f in files} == {16}
        for topic in TOPICS:
            for queue_id in range(3):
                assert reader.offset_range(topic, queue_id) == (0, 40)
                offsets, found = read_all(reader, topic, queue_id)
                assert offsets == list(range(40))
                assert found == [body(topic, queue_id, offset) for offset in range(40)]
    assert snapshot(written) == before


def test_an_empty_or_missing_store_has_nothing(tmp_path: Path) -> None:
    with StoreReader(tmp_path) as reader:
        assert reader.topics() == [] and reader.queue_ids("T") == [] and reader.offset_range("T", 0) == (0, 0)
        assert list(reader.read("T", 0, 0, 0)) == []
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(Exception, match="not a directory"):
        StoreReader(tmp_path / "absent")


def copy_store(written: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(written, target)
    return target


def queue_file(root: Path, topic: str, queue_id: int, first_offset: int) -> Path:
    return root / "consumequeue" / topic / str(queue_id) / f"{first_offset * ENTRY_SIZE:020d}"


def patch(path: Path, at: int, data: bytes) -> None:
    with path.open("r+b") as file:
        file.seek(at)
        file.write(data)


def test_a_torn_tail_is_not_part_of_the_range(written: Path, tmp_path: Path) -> None:
    root = copy_store(written, tmp_path)
    # Entry 40 (the first of the last file's free slots) half written: its size is there, its offset not
    # yet; entry 41 points at a record that is not there.
    last = queue_file(root, "TopicA", 0, 32)
    patch(last, 8 * ENTRY_SIZE, ENTRY.pack(0, 120, 0) + ENTRY.pack(3_000_000, 120, 0))
    with StoreReader(root) as reader:
        assert reader.offset_range("TopicA", 0) == (0, 40)
        with pytest.raises(DamagedRecordError) as caught:
            list(reader.read("TopicA", 0, 0, 42))
        assert caught.value.queue_offset == 40


def test_a_damaged_record_inside_the_range_is_an_error(written: Path, tmp_path: Path) -> None:
    root = copy_store(written, tmp_path)
    commit_log = sorted((root / "commitlog").iterdir())
    position = int(ENTRY.unpack_from(queue_file(root, "TopicB", 2, 0).read_bytes(), 5 * ENTRY_SIZE)[0])
    file_start = max(int(p.name) for p in commit_log if int(p.name) <= position)
    patch(root / "commitlog" / f"{file_start:020d}", position - file_start + HEAD_SIZE, b"X")  # the body's first byte
    with StoreReader(root) as reader:
        with pytest.raises(DamagedRecordError, match=f"byte {position}.*CRC") as caught:
            read_all(reader, "TopicB", 2)
        assert caught.value.queue_offset == 5
        with pytest.raises(DamagedRecordError, match="CRC") as caught:
            list(reader.read("TopicB", 2, 0, 40, max_records=40))
        assert caught.value.queue_offset == 5
    with StoreReader(root, check_crc=False) as reader:
        offsets, found = read_all(reader, "TopicB", 2)
        assert offsets == list(range(40)) and found[5] != body("TopicB", 2, 5)


def test_aged_out_data_is_an_error_or_skipped(written: Path, tmp_path: Path) -> None:
    root = copy_store(written, tmp_path)
    with StoreReader(root) as reader:
        full = reader.offset_range("TopicA", 0)
    for oldest in sorted((root / "commitlog").iterdir())[:2]:  # what retention deletes first
        oldest.unlink()
    with StoreReader(root) as reader:
        low, high = reader.offset_range("TopicA", 0)
        assert full[0] < low < high == full[1]
        assert read_all(reader, "TopicA", 0)[0] == list(range(low, high))
        with pytest.raises(DataAgedOutError, match=r"queue offsets \[0, "):
            list(reader.read("TopicA", 0, 0, high))
        with pytest.raises(DataAgedOutError, match=r"queue offsets \[0, "):
            list(reader.read("TopicA", 0, 0, high, max_records=1000))
        skipped = [o for c in reader.read("TopicA", 0, 0, high, skip_aged_out=True) for o in queue_offsets_of(c)]
        assert skipped == list(range(low, high))
        assert read_range(reader, "TopicA", 0, 0, high, max_records=5, skip_aged_out=True)[0] == skipped
    queue_file(root, "TopicA", 0, 0).unlink()  # and then the ConsumeQueue file that pointed there
    with StoreReader(root) as reader:
        assert reader.offset_range("TopicA", 0) == (max(low, 16), high)
        with pytest.raises(DataAgedOutError, match="ConsumeQueue file is gone"):
            list(reader.read("TopicA", 0, 0, high))


def test_reading_beside_a_writing_store_gives_consistent_prefixes(tmp_path: Path) -> None:
    config = small_config(
        tmp_path / "store", mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=20 * 50
    )
    stop = threading.Event()
    with MessageStore(config) as store:
        write(store, 5)

        def keep_writing() -> None:
            offset = 5
            while not stop.is_set() and offset < 2000:
                write(store, 1, first=offset)
                offset += 1

        writer = threading.Thread(target=keep_writing)
        writer.start()
        seen: dict[int, list[int]] = {0: [], 1: [], 2: []}
        try:
            with StoreReader(config.store_path_root_dir) as reader:
                for _ in range(20):
                    for queue_id in range(3):
                        offsets, found = read_all(reader, "TopicB", queue_id)
                        assert offsets == list(range(len(offsets)))
                        assert found == [body("TopicB", queue_id, offset) for offset in offsets]
                        seen[queue_id].append(len(offsets))
        finally:
            stop.set()
            writer.join()
    for counts in seen.values():
        assert counts == sorted(counts) and counts[0] >= 5


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux's /proc/self/maps")
def test_every_file_is_mapped_read_only(written: Path) -> None:
    with StoreReader(written) as reader:
        chunks = [chunk for queue_id in range(3) for chunk in reader.read("TopicA", queue_id, 0, 40)]
        maps = [line.split() for line in Path("/proc/self/maps").read_text().splitlines()]
        ours = [fields[1] for fields in maps if len(fields) > 5 and fields[5].startswith(str(written))]
        assert len(chunks) >= 3 and ours and all("w" not in permissions for permissions in ours)


def test_chunks_keep_to_the_byte_bound(written: Path) -> None:
    sizes = [
        ENTRY.unpack_from(queue_file(written, "TopicA", 1, first).read_bytes(), index * ENTRY_SIZE)[1]
        for first in (0, 16, 32)
        for index in range(16 if first < 32 else 8)
    ]
    with StoreReader(written) as reader:
        chunks = [queue_offsets_of(chunk) for chunk in reader.read("TopicA", 1, 0, 40, max_bytes=600)]
    assert [offset for chunk in chunks for offset in chunk] == list(range(40))
    for chunk in chunks:
        assert len(chunk) == 1 or sum(sizes[offset] for offset in chunk) <= 600
    assert len(chunks) >= sum(sizes) // 600


def test_a_record_that_is_not_its_entrys_is_damage(written: Path, tmp_path: Path) -> None:
    root = copy_store(written, tmp_path)
    other = queue_file(root, "TopicA", 1, 0).read_bytes()[3 * ENTRY_SIZE : 4 * ENTRY_SIZE]
    patch(queue_file(root, "TopicA", 0, 0), 3 * ENTRY_SIZE, other)  # entry 3 of queue 0 -> queue 1's record
    with StoreReader(root) as reader:
        assert reader.offset_range("TopicA", 0) == (0, 40)
        assert read_range(reader, "TopicA", 0, 0, 3) == ([0, 1, 2], [body("TopicA", 0, o) for o in range(3)])
        with pytest.raises(
            DamagedRecordError, match=r"it is topic 'TopicA', queue 1, offset 3.*entry says 'TopicA', 0, 3"
        ) as caught:
            list(reader.read("TopicA", 0, 0, 40))
        assert caught.value.queue_offset == 3
