"""Client settings, with the Java client's defaults."""

from __future__ import annotations

import enum
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rocketq.acl.signing import Credentials
from rocketq.common.group_topics import DEFAULT_MAX_RECONSUME_TIMES
from rocketq.common.names import group_name_problem
from rocketq.remoting.clock import SYSTEM_CLOCK, Clock


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientConfig:
    namesrv_addr: str = "127.0.0.1:9876"  # "host:port;host:port"
    instance_name: str = "DEFAULT"
    client_ip: str = ""  # "" = detect
    poll_name_server_interval_s: float = 30.0
    heartbeat_broker_interval_s: float = 30.0
    request_timeout_s: float = 3.0
    # an account of the brokers' ACL (plain_acl.yml): every request is signed with it; "" = unsigned
    access_key: str = ""
    secret_key: str = field(default="", repr=False)
    # what the periodic work (route polls, heartbeats, rebalancing, offset commits, lock renewal, the
    # consume-timeout scan, a queue's wait after a failed pull) reads and sleeps on; tests give a
    # rocketq.testing.FakeClock
    clock: Clock = field(default=SYSTEM_CLOCK, repr=False, compare=False)

    def __post_init__(self) -> None:
        if bool(self.access_key) != bool(self.secret_key):
            raise ValueError("access_key and secret_key go together: give both or neither")

    @property
    def name_servers(self) -> list[str]:
        return [a.strip() for a in self.namesrv_addr.replace(",", ";").split(";") if a.strip()]

    @property
    def credentials(self) -> Credentials | None:
        """The account requests are signed with, if any."""
        return Credentials(self.access_key, self.secret_key) if self.access_key else None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerConfig:
    group: str = "DEFAULT_PRODUCER"
    client: ClientConfig = ClientConfig()
    send_msg_timeout_s: float = 3.0
    retry_times_when_send_failed: int = 2  # sync sends: extra attempts on another broker
    # How long one attempt waits for the broker's answer. None: the rest of send_msg_timeout_s (as RocketMQ),
    # or for an idempotent send an equal share of it per attempt, leaving time to retry after a timeout.
    send_attempt_timeout_s: float | None = None
    # Mark every send idempotent (rocketq brokers store a repeat of its UNIQ_KEY once within their window;
    # docs/idempotent-send.md); a send's own ``idempotent=`` argument overrides this.
    idempotent: bool = False
    retry_times_when_send_async_failed: int = 2
    compress_msg_body_over_howmuch: int = 4096  # bytes; bodies above are zlib-compressed
    compress_level: int = 5
    max_message_size: int = 4 * 1024 * 1024
    default_topic_queue_nums: int = 4
    send_latency_fault_enable: bool = True
    create_topic_key: str = "TBW102"
    # Automatic batching (docs/producer-path.md, "Automatic batching"): a plain send made while an earlier
    # request to its topic is in flight waits for the end of the loop's turn and leaves in one
    # SEND_BATCH_MESSAGE with the others made meanwhile (each still gets its own SendResult); a send on an
    # idle topic leaves at once, alone. A batch holds at most batch_max_messages messages and batch_max_bytes
    # bytes of body (32 KiB: RocketMQ 5's autoBatch default batchMaxBytes).
    auto_batch: bool = True
    batch_max_bytes: int = 32 * 1024
    batch_max_messages: int = 256

    def __post_init__(self) -> None:
        _check_group(self.group)
        if self.batch_max_bytes < 1 or self.batch_max_messages < 1:
            raise ValueError(
                f"batch_max_bytes ({self.batch_max_bytes}) and batch_max_messages ({self.batch_max_messages})"
                " must be at least 1"
            )
        if self.batch_max_bytes > self.max_message_size:
            raise ValueError(
                f"batch_max_bytes ({self.batch_max_bytes}) must not exceed max_message_size ({self.max_message_size})"
            )
        if self.send_attempt_timeout_s is not None and not self.send_attempt_timeout_s > 0:
            raise ValueError(f"send_attempt_timeout_s must be above 0 (or None), not {self.send_attempt_timeout_s}")


class MessageModel(enum.Enum):
    CLUSTERING = "CLUSTERING"  # each message to one member of the group; offsets on the broker
    BROADCASTING = "BROADCASTING"  # each message to every member; offsets in a local file


class ConsumeFromWhere(enum.Enum):
    """Where a group with no committed offset for a queue starts."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerConfig:
    group: str
    client: ClientConfig = ClientConfig()
    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    consume_timestamp_ms: int = 0  # for CONSUME_FROM_TIMESTAMP; 0 = half an hour ago
    allocate_strategy: str = "AVG"  # AVG, AVG_BY_CIRCLE or CONSISTENT_HASH
    consume_thread_min: int = 20  # plain-function listener threads kept once started
    consume_thread_max: int = 20  # the pool grows to this under load (also: coroutine listeners at once)
    consume_message_batch_max_size: int = 1
    pull_batch_size: int = 32
    pull_threshold_for_queue: int = 1000  # cached messages per queue before pulling pauses
    pull_threshold_size_for_queue_mib: int = 100
    pull_threshold_for_topic: int = -1  # push: cached messages per topic, shared out over its queues; -1: off
    pull_threshold_size_for_topic_mib: int = -1  # push: the same in MiB; -1: off
    pull_interval_s: float = 0.0  # push: pause after each pull that brought messages
    consume_concurrently_max_span: int = 2000  # concurrent: pulling pauses while unfinished offsets span more
    consume_timeout_s: float = 900.0  # concurrent: a listener call running longer is given up (retried)
    max_reconsume_times: int = -1  # -1: 16 for concurrent consumption, no limit for orderly (see reconsume_limit)
    suspend_current_queue_time_ms: int = 1000  # orderly: pause after a failed message
    persist_consumer_offset_interval_s: float = 5.0
    rebalance_interval_s: float = 20.0
    lock_renew_interval_s: float = 20.0
    broker_suspend_max_time_ms: int = 15_000  # long-polling hold asked of the broker
    consumer_timeout_when_suspend_s: float = 30.0
    pull_time_delay_when_exception_s: float = 3.0
    offset_store_dir: Path = Path.home() / ".rocketq_offsets"  # broadcasting: <dir>/<ip>@<instance>/<group>/

    def reconsume_limit(self, *, orderly: bool) -> int:
        """Deliveries after the first before a failing message becomes a dead letter. Unset (-1), RocketMQ's
        rule: 16 for concurrent consumption, no limit for orderly (its queue waits for the message)."""
        if self.max_reconsume_times >= 0:
            return self.max_reconsume_times
        return sys.maxsize if orderly else DEFAULT_MAX_RECONSUME_TIMES

    def queue_limits(self, queues_of_topic: int) -> tuple[int, int]:
        """How many messages and bytes one of a push consumer's ``queues_of_topic`` queues of a topic may
        cache before its pulling pauses. The per-queue thresholds, unless a topic-wide one is set: then
        the queue's equal share of it, at least 1 message or 1 MiB, replaces the per-queue one (as
        RocketMQ shares out pullThresholdForTopic and pullThresholdSizeForTopic at each rebalance)."""
        share = max(1, queues_of_topic)
        messages = self.pull_threshold_for_queue
        if self.pull_threshold_for_topic != -1:
            messages = max(1, self.pull_threshold_for_topic // share)
        size_mib = self.pull_threshold_size_for_queue_mib
        if self.pull_threshold_size_for_topic_mib != -1:
            size_mib = max(1, self.pull_threshold_size_for_topic_mib // share)
        return messages, size_mib * 1024 * 1024

    def __post_init__(self) -> None:
        _check_group(self.group)
        for name in ("pull_threshold_for_topic", "pull_threshold_size_for_topic_mib"):
            value = getattr(self, name)
            if value != -1 and value < 1:
                raise ValueError(f"{name} must be -1 (off) or at least 1, not {value}")
        if not self.pull_interval_s >= 0:
            raise ValueError(f"pull_interval_s must be 0 or more, not {self.pull_interval_s}")
        if not 1 <= self.consume_thread_min <= self.consume_thread_max:
            raise ValueError(
                f"consume_thread_min ({self.consume_thread_min}) must be at least 1 and at most"
                f" consume_thread_max ({self.consume_thread_max})"
            )


def _check_group(group: str) -> None:
    """A group name RocketMQ refuses (its retry and dead-letter topics are named after it) fails here,
    when the config is made, rather than at the broker later."""
    problem = group_name_problem(group)
    if problem is not None:
        raise ValueError(problem)
