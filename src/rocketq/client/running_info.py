"""A consumer's answer to GET_CONSUMER_RUNNING_INFO (307): its settings, real subscriptions, the state
of each assigned queue, and its pull and consume rates per topic (Java's ConsumerStatsManager).

``ConsumerStats`` counts pulls (round trip, messages) and listener runs (messages consumed, failed,
time spent) per topic, and keeps a copy of the totals at most once a second (on the ``clock`` it is
given): a rate is the growth since the oldest copy of the last minute, ``consumeFailedMsgs`` the
failures of the last hour. Counting takes a lock (consume threads count too) once per pull or run,
never per message.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocketq.client.message import decode_messages
from rocketq.protocol import RemotingCommand, ResponseCode, make_response
from rocketq.protocol.errors import RemoteProtocolError
from rocketq.protocol.running_info import (
    PROP_CLIENT_VERSION,
    PROP_CONSUME_ORDERLY,
    PROP_CONSUME_TYPE,
    PROP_CONSUMER_START_TIMESTAMP,
    PROP_NAMESERVER_ADDR,
    PROP_THREADPOOL_CORE_SIZE,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    ConsumeStatus,
    GetConsumerRunningInfoRequestHeader,
    ProcessQueueInfo,
)

if TYPE_CHECKING:
    from rocketq.client.consumer_core import ConsumerCore
    from rocketq.client.process_queue import ProcessQueue

VERSION_DESC = "V4_9_8"
"""RocketMQ's name of the client version rocketq announces (MQVersion ordinal 409)."""

RATE_WINDOW_S = 60.0
FAILED_WINDOW_S = 3600.0


@dataclass(slots=True)
class _Totals:
    pulls: int = 0
    pull_rt_ms: float = 0.0
    pulled: int = 0
    runs_ms: float = 0.0
    consumed: int = 0  # messages the listener took, ok or failed
    ok: int = 0
    failed: int = 0

    def copy(self) -> _Totals:
        return _Totals(self.pulls, self.pull_rt_ms, self.pulled, self.runs_ms, self.consumed, self.ok, self.failed)


class ConsumerStats:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        """``clock``: seconds, for the rates' windows (tests give a fake one)."""
        self._clock = clock
        self._lock = threading.Lock()
        self._totals: dict[str, _Totals] = {}
        # per topic: copies of the totals every second for the last minute, every minute for the last hour
        self._seconds: dict[str, deque[tuple[float, _Totals]]] = {}
        self._minutes: dict[str, deque[tuple[float, _Totals]]] = {}

    def _keep(self, topic: str, now: float) -> _Totals:
        totals = self._totals.get(topic)
        if totals is None:
            totals = self._totals[topic] = _Totals()
            self._seconds[topic] = deque([(now, totals.copy())])
            self._minutes[topic] = deque([(now, totals.copy())])
            return totals
        seconds = self._seconds[topic]
        if now - seconds[-1][0] < 1.0:  # the usual case: a copy was kept this second already
            return totals
        seconds.append((now, totals.copy()))
        while len(seconds) > 1 and now - seconds[1][0] >= RATE_WINDOW_S:
            seconds.popleft()
        minutes = self._minutes[topic]
        if now - minutes[-1][0] >= 60.0:
            minutes.append((now, totals.copy()))
            while len(minutes) > 1 and now - minutes[1][0] >= FAILED_WINDOW_S:
                minutes.popleft()
        return totals

    def pulled(self, topic: str, messages: int, round_trip_s: float) -> None:
        """A pull of ``topic`` returned ``messages`` after ``round_trip_s``."""
        with self._lock:
            totals = self._keep(topic, self._clock())
            totals.pulls += 1
            totals.pull_rt_ms += round_trip_s * 1000
            totals.pulled += messages

    def consumed(self, topic: str, ok: int, failed: int, spent_s: float) -> None:
        """The listener took ``ok + failed`` messages of ``topic`` in ``spent_s``; ``failed`` go back."""
        with self._lock:
            totals = self._keep(topic, self._clock())
            totals.runs_ms += spent_s * 1000
            totals.consumed += ok + failed
            totals.ok += ok
            totals.failed += failed

    def status(self, topic: str) -> ConsumeStatus:
        """The rates of the last minute, and the failures of the last hour."""
        with self._lock:
            now = self._clock()
            totals = self._keep(topic, now)
            seconds_copies = self._seconds[topic]
            minute = next(((at, c) for at, c in seconds_copies if now - at <= RATE_WINDOW_S), seconds_copies[-1])
            hour_start = self._minutes[topic][0][1]
        began, start = minute
        seconds = max(now - began, 1e-9)
        pulls, consumed = totals.pulls - start.pulls, totals.consumed - start.consumed
        return ConsumeStatus(
            pull_rt=round((totals.pull_rt_ms - start.pull_rt_ms) / pulls, 3) if pulls else 0.0,
            pull_tps=round((totals.pulled - start.pulled) / seconds, 3) if now > began else 0.0,
            consume_rt=round((totals.runs_ms - start.runs_ms) / consumed, 3) if consumed else 0.0,
            consume_ok_tps=round((totals.ok - start.ok) / seconds, 3) if now > began else 0.0,
            consume_failed_tps=round((totals.failed - start.failed) / seconds, 3) if now > began else 0.0,
            consume_failed_msgs=totals.failed - hour_start.failed,
        )

    def topics(self) -> list[str]:
        with self._lock:
            return sorted(self._totals)


def thread_stacks() -> str:
    """Every thread's stack, as ``jstack`` shows a JVM's (what ``consumerStatus -s`` asks for)."""
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    parts = []
    for ident, frame in sys._current_frames().items():
        parts.append(f'"{names.get(ident, "?")}" ident={ident}\n' + "".join(traceback.format_stack(frame)))
    return "\n".join(parts)


def running_info(core: ConsumerCore, *, jstack: bool = False) -> ConsumerRunningInfo:
    """What ``core``'s consumer is doing now, as Java's ConsumerRunningInfo says it."""
    config = core.config
    properties = {
        PROP_NAMESERVER_ADDR: config.client.namesrv_addr,
        PROP_CONSUME_TYPE: core.consume_type,
        PROP_CONSUME_ORDERLY: str(core.orderly).lower(),
        PROP_THREADPOOL_CORE_SIZE: str(config.consume_thread_min),
        PROP_CONSUMER_START_TIMESTAMP: str(core.started_ms),
        PROP_CLIENT_VERSION: VERSION_DESC,
        "consumerGroup": config.group,
        "messageModel": config.message_model.value,
        "consumeFromWhere": config.consume_from_where.value,
        "allocateMessageQueueStrategy": config.allocate_strategy,
        "pullBatchSize": str(config.pull_batch_size),
        "consumeMessageBatchMaxSize": str(config.consume_message_batch_max_size),
        "consumeThreadMin": str(config.consume_thread_min),
        "consumeThreadMax": str(config.consume_thread_max),
    }
    topics = sorted(core.subscriptions)
    return ConsumerRunningInfo(
        properties=properties,
        subscription_set=[core.subscription(topic) for topic in topics],
        mq_table=core.queue_infos(),
        status_table={topic: core.stats.status(topic) for topic in topics},
        jstack=thread_stacks() if jstack else None,
    )


def running_info_response(core: ConsumerCore, request: RemotingCommand) -> RemotingCommand:
    try:
        header = GetConsumerRunningInfoRequestHeader.from_ext_fields(request.ext_fields)
    except RemoteProtocolError as exc:
        return make_response(request, ResponseCode.SYSTEM_ERROR, str(exc))
    if header.consumer_group != core.config.group:
        return make_response(
            request, ResponseCode.SYSTEM_ERROR, f"this client has no consumer group {header.consumer_group}"
        )
    body = running_info(core, jstack=header.jstack_enable).encode()
    return make_response(request, ResponseCode.SUCCESS, body=body)


async def consume_directly_response(core: ConsumerCore, request: RemotingCommand) -> RemotingCommand:
    """The message in the request's body through the consumer's listener, as RocketMQ's push consumers
    do for ``consumeMessage``; the answer says how it went (its offset is not committed)."""
    messages = decode_messages(request.body)
    if core.consume_directly is None or len(messages) != 1:
        reason = "a pull consumer has no listener" if core.consume_directly is None else "no message in the request"
        return make_response(request, ResponseCode.SYSTEM_ERROR, f"cannot consume the message directly: {reason}")
    result = await core.consume_directly(messages[0])
    return make_response(request, ResponseCode.SUCCESS, body=result.encode())


def process_queue_info(process: ProcessQueue, commit_offset: int) -> ProcessQueueInfo:
    """One assigned queue of a push consumer, as Java's ProcessQueueInfo describes it."""
    first = process.first_cached_offset()
    return ProcessQueueInfo(
        commit_offset=commit_offset,
        cached_msg_min_offset=max(first, 0),
        cached_msg_max_offset=max(process.max_offset, 0) if first >= 0 else 0,
        cached_msg_count=process.count,
        cached_msg_size_in_mi_b=process.cached_bytes // (1024 * 1024),
        locked=process.locked,
        droped=process.dropped,
        last_pull_timestamp=process.last_pull_ms,
        last_consume_timestamp=process.last_consume_ms,
    )


def directly_result(failed: bool, orderly: bool, spent_s: float) -> ConsumeMessageDirectlyResult:
    """How a listener's call on one message went, as ConsumeMessageDirectlyResult says it."""
    return ConsumeMessageDirectlyResult(
        order=orderly,
        auto_commit=True,
        consume_result="CR_LATER" if failed else "CR_SUCCESS",
        remark="the listener asked for a redelivery or raised" if failed else None,
        spent_time_mills=int(spent_s * 1000),
    )
