"""rocketq-only requests for transactions (codes 9000-9019): their headers and JSON bodies.

END_TRANSACTION_GROUP (9000) ends a grouped transaction on one broker. Header: ``producerGroup``,
``transactionGroupId``, ``commitOrRollback`` (8 commit, 12 rollback). A commit's body lists the parts
to commit with the number of messages each must hold (``TransactionGroupParts``). The answer:
SUCCESS with a ``TransactionGroupResult`` body; TRANSACTION_FAILED (4) when a listed part does not hold
its messages (the body says which; nothing changed); SYSTEM_BUSY while another request ends the group.

GET_PENDING_TRANSACTIONS (9001), no header: the broker's pending half messages per producer group
(``PendingTransactions``).
"""

from __future__ import annotations

from rocketq.protocol.bodies import JsonBody
from rocketq.protocol.codes import RequestCode
from rocketq.protocol.ext_fields import RequestHeader


class EndTransactionGroupRequestHeader(RequestHeader, frozen=True, kw_only=True):
    CODE = RequestCode.END_TRANSACTION_GROUP

    producer_group: str
    transaction_group_id: str
    commit_or_rollback: int


class TransactionGroupParts(JsonBody, frozen=True, kw_only=True):
    """Part id -> the number of its messages this broker must hold for the commit to proceed."""

    parts: dict[str, int]


class MissingPart(JsonBody, frozen=True, kw_only=True):
    part: str
    expected: int
    pending: int


class TransactionGroupResult(JsonBody, frozen=True, kw_only=True):
    committed: int = 0  # messages made visible by this request
    rolled_back: int = 0  # half messages of the group rolled back by it (unlisted parts, a replay)
    already_committed: bool = False  # the group had been committed before: nothing was made visible
    missing: list[MissingPart] = []  # with TRANSACTION_FAILED: the parts short of their messages


class PendingGroup(JsonBody, frozen=True, kw_only=True):
    producer_group: str
    half_messages: int  # pending: neither committed nor rolled back yet
    runs: int  # puts they came in (a transactional batch is one)
    transaction_groups: int  # grouped transactions among them
    oldest_store_timestamp: int


class PendingTransactions(JsonBody, frozen=True, kw_only=True):
    groups: list[PendingGroup] = []
    committed_groups: int = 0  # ids in the broker's committed table
