"""What the broker knows of its half messages: which are pending (in runs: a transactional batch is one
run), which are settled, how often each was checked, and the decisions taken on them. Pure: the
service reads and writes the store and calls these.

Half-queue offsets identify half messages. Every offset below ``done_below`` is settled; settled
offsets above it are kept as ranges (``OffsetRanges``), so the table stays small while a few half
messages wait long. A half message is settled by an op message; the ledger learns of it when the
service stores one (``settle``) or reads one back after a restart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .committed import CommittedGroups, GroupKey
from .half import HalfInfo
from .ranges import OffsetRanges, Range


@dataclass(slots=True, init=False)
class HalfRun:
    """Consecutive half messages of one transaction (a transaction group's part may have several)."""

    first: int  # half-queue offset of the first half message
    count: int  # half messages
    messages: int  # the messages they hold (a transactional batch is one half message)
    commit_log_offset: int  # of the first half message
    store_timestamp: int  # ms
    info: HalfInfo
    checks: int  # CHECK_TRANSACTION_STATE sent for it so far
    settling: bool  # a settlement of it is being stored

    def __init__(  # written out: see rocketq.native.modules (one per half message)
        self,
        first: int,
        count: int,
        messages: int,
        commit_log_offset: int,
        store_timestamp: int,
        info: HalfInfo,
        checks: int = 0,
        settling: bool = False,
    ) -> None:
        self.first = first
        self.count = count
        self.messages = messages
        self.commit_log_offset = commit_log_offset
        self.store_timestamp = store_timestamp
        self.info = info
        self.checks = checks
        self.settling = settling

    @property
    def end(self) -> int:
        return self.first + self.count

    @property
    def group_key(self) -> GroupKey | None:
        group_id = self.info.group_id
        return None if group_id is None else (self.info.producer_group, group_id)


@dataclass(frozen=True, slots=True)
class Settings:
    """The broker settings the decisions use (times in ms)."""

    timeout_ms: int  # transactionTimeOut: a half message is checked once this old
    check_max: int  # transactionCheckMax: unanswered checks before it is rolled back
    group_timeout_ms: int  # a transaction group's messages without CHECK_IMMUNITY_TIME_IN_SECONDS


@dataclass(slots=True)
class CheckPlan:
    """What a check round does: ``check`` these runs' producers, roll back ``discard`` (out of checks)
    and the ``orphans`` (transaction groups nobody ended in time)."""

    check: list[HalfRun] = field(default_factory=list)
    discard: list[HalfRun] = field(default_factory=list)
    orphans: list[GroupKey] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class GroupPlan:
    """A transaction group's end: the runs to commit and to roll back, or the parts that do not hold
    the expected number of pending messages (``missing``: part -> (expected, found))."""

    commit: list[HalfRun]
    rollback: list[HalfRun]
    missing: dict[str, tuple[int, int]]
    already_committed: bool


class Ledger:
    def __init__(self, committed: CommittedGroups) -> None:
        self.runs: dict[int, HalfRun] = {}  # by first offset
        self.groups: dict[GroupKey, dict[int, HalfRun]] = {}
        self.settled = OffsetRanges()  # settled offsets at or above done_below
        self.done_below = 0
        self.op_offset = 0  # op-queue offset up to which ops are in this ledger
        self.committed = committed

    # -- learning -------------------------------------------------------------------------------------

    def add(self, run: HalfRun) -> HalfRun | None:
        """Record a pending run (its settled offsets are ignored); the run kept, or None when settled.
        A run of a transaction group continuing the previous run of the same part (a restart reads
        messages one by one) is merged into it: a group's parts are settled whole."""
        if run.end <= self.done_below or self.settled.covers(run.first, run.end):
            return None
        if self.runs.get(run.first) is not None:
            return self.runs[run.first]
        key = run.group_key
        previous = self._run_ending_at(run.first, key)
        if previous is not None and key is not None and previous.info == run.info and not previous.settling:
            previous.count += run.count
            previous.messages += run.messages
            return previous
        self.runs[run.first] = run
        if key is not None:
            self.groups.setdefault(key, {})[run.first] = run
        return run

    def _run_ending_at(self, offset: int, key: GroupKey | None) -> HalfRun | None:
        if not self.runs:
            return None
        last = next(reversed(self.runs.values()))  # runs are mostly added in offset order
        return last if last.end == offset and last.group_key == key else None

    def is_settled(self, offset: int) -> bool:
        return offset < self.done_below or offset in self.settled

    def run_of(self, offset: int) -> HalfRun | None:
        """The pending run holding ``offset`` (a run's first offset is found at once)."""
        run = self.runs.get(offset)
        if run is not None:
            return run
        for candidate in self.runs.values():
            if candidate.first <= offset < candidate.end:
                return candidate
        return None

    def settle(self, ranges: list[Range], runs: Iterable[HalfRun] = (), op_end: int | None = None) -> None:
        """Mark ``ranges`` settled (an op message listing them is stored) and forget ``runs``, the pending
        runs they hold; ``op_end``: the op queue's offset after that op."""
        for start, end in ranges:
            if start <= self.done_below < end and not self.settled:  # the common case: settled in order
                self.done_below = end
            else:
                self.settled.add(start, end)
        for run in runs:
            self._forget(run)
        while self.done_below in self.settled:
            self.done_below = self.settled.end_of_range_at(self.done_below)
        self.settled.drop_below(self.done_below)
        if op_end is not None:
            self.op_offset = max(self.op_offset, op_end)

    def _forget(self, run: HalfRun) -> None:
        self.runs.pop(run.first, None)
        key = run.group_key
        if key is not None:
            members = self.groups.get(key)
            if members is not None:
                members.pop(run.first, None)
                if not members:
                    del self.groups[key]

    def start_at(self, offset: int) -> None:
        """The half queue starts at ``offset`` (older files deleted): everything below is settled."""
        if offset > self.done_below:
            self.settle([(self.done_below, offset)], [run for run in self.runs.values() if run.end <= offset])

    # -- decisions ------------------------------------------------------------------------------------

    def check_plan(self, now_ms: int, settings: Settings) -> CheckPlan:
        """The runs due for a check or a rollback at ``now_ms`` (a check round)."""
        plan = CheckPlan()
        for run in self.runs.values():
            if run.settling or run.group_key is not None:
                continue
            immunity_ms = run.info.immunity_s * 1000 if run.info.immunity_s is not None else 0
            if now_ms - run.store_timestamp < max(settings.timeout_ms, immunity_ms):
                continue
            if run.checks >= settings.check_max:
                plan.discard.append(run)
            else:
                plan.check.append(run)
        for key, members in self.groups.items():
            runs = list(members.values())
            if any(run.settling for run in runs):
                continue
            newest = max(run.store_timestamp for run in runs)
            immunities = [run.info.immunity_s for run in runs if run.info.immunity_s is not None]
            wait_ms = max(immunities) * 1000 if immunities else settings.group_timeout_ms
            if now_ms - newest >= wait_ms:
                plan.orphans.append(key)
        return plan

    def group_plan(self, key: GroupKey, parts: Mapping[str, int] | None) -> GroupPlan:
        """Ending transaction group ``key``: with ``parts`` (part -> expected pending messages) a commit,
        else a rollback of everything pending. A commit of an id already committed rolls back what is
        pending (a replay); a part without its expected count is ``missing`` and nothing changes."""
        runs = sorted(self.groups.get(key, {}).values(), key=lambda run: run.first)
        if parts is None or key in self.committed:
            return GroupPlan([], runs, {}, parts is not None)
        found: dict[str, int] = {}
        for run in runs:
            part = run.info.part or ""
            found[part] = found.get(part, 0) + run.messages
        missing = {
            part: (expected, found.get(part, 0)) for part, expected in parts.items() if found.get(part, 0) != expected
        }
        if missing:
            return GroupPlan([], [], missing, False)
        commit = [run for run in runs if (run.info.part or "") in parts]
        rollback = [run for run in runs if (run.info.part or "") not in parts]
        return GroupPlan(commit, rollback, {}, False)

    # -- views ----------------------------------------------------------------------------------------

    def pending_by_producer_group(self) -> dict[str, dict[str, int]]:
        """Per producer group: pending half messages, their runs, open transaction groups, the oldest
        store time."""
        table: dict[str, dict[str, int]] = {}
        groups: dict[str, set[str]] = {}
        for run in self.runs.values():
            row = table.setdefault(
                run.info.producer_group, {"messages": 0, "runs": 0, "groups": 0, "oldest": run.store_timestamp}
            )
            row["messages"] += run.messages
            row["runs"] += 1
            row["oldest"] = min(row["oldest"], run.store_timestamp)
            if run.info.group_id is not None:
                groups.setdefault(run.info.producer_group, set()).add(run.info.group_id)
        for producer_group, ids in groups.items():
            table[producer_group]["groups"] = len(ids)
        return table

    # -- persistence ----------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The ledger's state but the pending runs (rebuilt from the half queue after a restart)."""
        return {
            "doneBelow": self.done_below,
            "settled": [list(r) for r in self.settled],
            "opOffset": self.op_offset,
            "checks": {str(run.first): run.checks for run in self.runs.values() if run.checks},
            "committed": self.committed.to_json(),
        }

    def restore(self, document: Mapping[str, Any]) -> dict[int, int]:
        """Load a snapshot; returns the check counts by first offset (for the runs rebuilt later)."""
        self.done_below = int(document.get("doneBelow", 0))
        self.settled = OffsetRanges((int(start), int(end)) for start, end in document.get("settled", []))
        self.op_offset = int(document.get("opOffset", 0))
        self.committed.load_json(document.get("committed", []))
        return {int(first): int(checks) for first, checks in (document.get("checks") or {}).items()}


def runs_as_ranges(runs: list[HalfRun]) -> list[Range]:
    """The offsets of ``runs`` as the fewest ranges."""
    ranges: list[Range] = []
    for run in sorted(runs, key=lambda r: r.first):
        if ranges and ranges[-1][1] == run.first:
            ranges[-1] = (ranges[-1][0], run.end)
        else:
            ranges.append((run.first, run.end))
    return ranges


__all__ = ["CheckPlan", "GroupPlan", "HalfRun", "Ledger", "Settings", "runs_as_ranges"]
