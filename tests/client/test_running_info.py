"""A consumer's pull and consume rates (``ConsumerStats``) on a fake clock, and the running-info body
in Java's form (``ConsumerRunningInfo``)."""

from __future__ import annotations

import json

from rocketq.client.consume_stats import ConsumerStats
from rocketq.protocol.bodies import SubscriptionData
from rocketq.protocol.fastjson import quote_object_keys
from rocketq.protocol.running_info import ConsumerRunningInfo, ConsumeStatus, ProcessQueueInfo, QueueInfo


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_rates_of_the_last_minute_and_failures_of_the_last_hour() -> None:
    clock = Clock()
    stats = ConsumerStats(clock)
    assert stats.status("T") == ConsumeStatus()
    for _ in range(120):  # two minutes: a pull of 10 messages taking 20 ms and a run of 10 (2 failing) a second
        stats.pulled("T", 10, 0.020)
        stats.consumed("T", 8, 2, 0.050)
        clock.now += 1.0
    status = stats.status("T")
    assert status.pull_rt == 20.0 and status.pull_tps == 10.0
    assert status.consume_rt == 5.0 and status.consume_ok_tps == 8.0 and status.consume_failed_tps == 2.0
    assert status.consume_failed_msgs == 240  # both minutes, within the hour
    clock.now += 3600.0  # an hour of nothing
    quiet = stats.status("T")
    assert quiet.pull_tps == 0.0 and quiet.consume_ok_tps == 0.0 and quiet.consume_failed_msgs == 0
    assert stats.topics() == ["T"]


def test_running_info_body_is_javas() -> None:
    info = ConsumerRunningInfo(
        properties={"PROP_CONSUME_TYPE": "CONSUME_PASSIVELY"},
        subscription_set=[SubscriptionData(topic="T", sub_string="*")],
        mq_table=[QueueInfo("T", "broker-a", 1, ProcessQueueInfo(commit_offset=7, cached_msg_count=3))],
        status_table={"T": ConsumeStatus(pull_tps=1.5)},
    )
    body = info.encode()
    assert body.startswith(b'{"mqTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"commitOffset":7,')
    document = json.loads(quote_object_keys(body))
    assert document["statusTable"]["T"]["pullTPS"] == 1.5 and document["subscriptionSet"][0]["subString"] == "*"
    queue_info = next(iter(document["mqTable"].values()))
    assert queue_info["cachedMsgCount"] == 3 and "cachedMsgSizeInMiB" in queue_info and "droped" in queue_info
    assert ConsumerRunningInfo.decode(body) == info
