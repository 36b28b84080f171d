"""Drives the official RocketMQ C++ client (PyPI ``rocketmq==0.4.4``) in a child process.

usage: cpp_driver.py NAMESRV produce TOPIC
       cpp_driver.py NAMESRV produce_more TOPIC       (a batch, a delayed message, ordered per key)
       cpp_driver.py NAMESRV consume TOPIC GROUP EXPECTED SECONDS [clustering|broadcasting|orderly]
       cpp_driver.py NAMESRV pull TOPIC GROUP EXPRESSION
       cpp_driver.py NAMESRV try_send TOPIC BODY           (one sync send; "failed" instead of raising)
Prints one JSON object per line: {"event": "sent"|"failed"|"received"|"ready"|"done", ...}.
With CPP_ACCESS_KEY and CPP_SECRET_KEY in the environment, every client signs its requests with them
(``set_session_credentials(..., "ALIYUN")``, for brokers with ACL).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

from rocketmq.client import (  # type: ignore[import-untyped]
    Message,
    MessageModel,
    Producer,
    PullConsumer,
    PushConsumer,
    RecvMessage,
    SendStatus,
    _CConsumeStatus,
    dll,
    ffi_check,
)

_OUTPUT = threading.Lock()  # the C++ client calls back on its own threads


def emit(**fields: object) -> None:
    text = {k: v.decode(errors="replace") if isinstance(v, bytes) else v for k, v in fields.items()}
    with _OUTPUT:
        sys.stdout.write(json.dumps(text) + "\n")
        sys.stdout.flush()


def with_credentials(client: Any) -> Any:
    """``client`` signing with CPP_ACCESS_KEY/CPP_SECRET_KEY, when the environment has them."""
    access_key = os.environ.get("CPP_ACCESS_KEY")
    if access_key:
        client.set_session_credentials(access_key, os.environ["CPP_SECRET_KEY"], "ALIYUN")
    return client


def produce(namesrv: str, topic: str) -> None:
    producer = with_credentials(Producer("CPP_PG"))
    producer.set_namesrv_addr(namesrv)
    producer.start()
    try:
        sync = Message(topic)
        sync.set_keys("cpp-key-1 cpp-key-2")
        sync.set_tags("TagA")
        sync.set_property("origin", "cpp")
        sync.set_body("cpp-sync")
        result = producer.send_sync(sync)
        emit(
            event="sent",
            kind="sync",
            status=int(result.status == SendStatus.OK),
            msg_id=result.msg_id,
            offset=result.offset,
        )
        oneway = Message(topic)
        oneway.set_tags("TagB")
        oneway.set_body("cpp-oneway")
        producer.send_oneway(oneway)
        emit(event="sent", kind="oneway")
        for i in range(3):
            ordered = Message(topic)
            ordered.set_keys(f"order-{i}")
            ordered.set_body(f"cpp-orderly-{i}")
            result = producer.send_orderly(ordered, 7)
            emit(
                event="sent",
                kind="orderly",
                status=int(result.status == SendStatus.OK),
                msg_id=result.msg_id,
                offset=result.offset,
            )
        big = Message(topic)
        big.set_tags("Big")
        big.set_body("x" * 5000)
        result = producer.send_sync(big)
        emit(event="sent", kind="big", status=int(result.status == SendStatus.OK), msg_id=result.msg_id)
        time.sleep(0.5)
    finally:
        producer.shutdown()
    emit(event="done")


def produce_more(namesrv: str, topic: str) -> None:
    """SEND_BATCH_MESSAGE as the C++ client encodes it, a delay level, and sharding-key order."""
    producer = with_credentials(Producer("CPP_PG_MORE"))
    producer.set_namesrv_addr(namesrv)
    producer.start()
    try:
        batch = []
        for i in range(3):
            item = Message(topic)
            item.set_keys(f"batch-key-{i}")
            item.set_tags("Batch")
            item.set_body(f"cpp-batch-{i}")
            batch.append(item)
        result = producer.send_batch(batch)
        emit(event="sent", kind="batch", status=int(result.status == SendStatus.OK), msg_id=result.msg_id)
        delayed = Message(topic)
        delayed.set_tags("Delayed")
        delayed.set_delay_time_level(2)
        delayed.set_body("cpp-delayed")
        result = producer.send_sync(delayed)
        emit(event="sent", kind="delayed", status=int(result.status == SendStatus.OK), at=time.time())
        for i in range(12):  # three keys, four messages each, interleaved
            ordered = Message(topic)
            ordered.set_tags("Ordered")
            ordered.set_body(f"key{i % 3}-{i // 3}")
            result = producer.send_orderly(ordered, i % 3)
            emit(event="sent", kind="orderly", status=int(result.status == SendStatus.OK))
    finally:
        producer.shutdown()
    emit(event="done")


def consume(namesrv: str, topic: str, group: str, expected: int, seconds: float, mode: str = "clustering") -> None:
    received = []
    failed_once: set[bytes] = set()

    def on_message(handle: object, raw_message: object) -> int:
        message = RecvMessage(raw_message)
        received.append(1)
        body = message.body
        emit(
            event="received",
            topic=message.topic,
            tags=message.tags,
            keys=message.keys,
            body=body,
            msg_id=message.id,
            queue_id=message.queue_id,
            queue_offset=message.queue_offset,
            origin=message.get_property("origin"),
            reconsume_times=message.reconsume_times,
            at=time.time(),
        )
        if body.startswith(b"fail-once") and body not in failed_once:
            failed_once.add(body)
            return int(_CConsumeStatus.RECONSUME_LATER.value)
        return int(_CConsumeStatus.CONSUME_SUCCESS.value)

    model = MessageModel.BROADCASTING if mode == "broadcasting" else MessageModel.CLUSTERING
    consumer = with_credentials(PushConsumer(group, orderly=mode == "orderly", message_model=model))
    consumer.set_namesrv_addr(namesrv)
    # The 0.4.4 binding signals RECONSUME_LATER only by an exception that it re-raises through ctypes,
    # which then returns an undefined status; so this registers a callback returning the status itself.
    ffi_check(dll.Subscribe(consumer._handle, topic.encode(), b"*"))
    consumer._register_callback(on_message)
    consumer.start()
    emit(event="ready")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len(received) < expected:
        time.sleep(0.05)
    time.sleep(0.3)  # let the offset commit go out
    consumer.shutdown()
    emit(event="done", count=len(received))


def pull(namesrv: str, topic: str, group: str, expression: str) -> None:
    """Every queue of ``topic`` from offset 0 until the broker says there is nothing new."""
    consumer = with_credentials(PullConsumer(group))
    consumer.set_namesrv_addr(namesrv)
    consumer.start()
    try:
        for message in consumer.pull(topic, expression):
            emit(event="received", body=message.body, tags=message.tags, queue_id=message.queue_id,
                 queue_offset=message.queue_offset)  # fmt: skip
    finally:
        consumer.shutdown()
    emit(event="done")


def try_send(namesrv: str, topic: str, body: str) -> None:
    producer = with_credentials(Producer("CPP_PG_TRY"))
    producer.set_namesrv_addr(namesrv)
    producer.start()
    try:
        message = Message(topic)
        message.set_body(body)
        try:
            result = producer.send_sync(message)
        except Exception as exc:  # the binding raises on a refused send
            emit(event="failed", error=f"{type(exc).__name__}: {exc}")
        else:
            emit(event="sent", status=int(result.status == SendStatus.OK), offset=result.offset)
    finally:
        producer.shutdown()
    emit(event="done")


if __name__ == "__main__":
    namesrv_address, mode, topic_name = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "produce":
        produce(namesrv_address, topic_name)
    elif mode == "produce_more":
        produce_more(namesrv_address, topic_name)
    elif mode == "try_send":
        try_send(namesrv_address, topic_name, sys.argv[4])
    elif mode == "pull":
        pull(namesrv_address, topic_name, sys.argv[4], sys.argv[5])
    else:
        consume(namesrv_address, topic_name, sys.argv[4], int(sys.argv[5]), float(sys.argv[6]), *sys.argv[7:8])
