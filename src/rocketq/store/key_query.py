"""Records by key and store time, through the IndexFiles: what QUERY_MESSAGE answers.

The index maps the hash of ``topic#key`` to CommitLog offsets and keeps store times to the second, so
each candidate is read and kept only when it is really of the topic, holds the key (``key_matches``:
a different key with the same hash is dropped) and was stored inside the range to the millisecond.
Only kept records count towards the limit, so collisions never crowd out real matches.
"""

from __future__ import annotations

from rocketq.common.key_match import key_matches
from rocketq.common.record import StoredRecord
from rocketq.store.commit_log import CommitLog
from rocketq.store.index_service import IndexService


def records_by_key(
    index: IndexService,
    commit_log: CommitLog,
    topic: str,
    key: str,
    max_num: int,
    begin_ms: int,
    end_ms: int,
    unique: bool | None,
) -> list[StoredRecord]:
    """Up to ``max_num`` records of ``topic`` holding ``key`` (as UNIQ_KEY when ``unique``, in KEYS when
    not, either when None) stored in [begin_ms, end_ms] (ms, both ends included), newest first."""
    records: list[StoredRecord] = []

    def accept(offset: int) -> bool:
        record = commit_log.read_record(offset)
        if (
            record is None
            or record.topic != topic
            or not begin_ms <= record.store_timestamp <= end_ms
            or not key_matches(record.properties, key, unique)
        ):
            return False
        records.append(record)
        return True

    index.query(topic, key, max_num, begin_ms, end_ms, accept)
    return records
