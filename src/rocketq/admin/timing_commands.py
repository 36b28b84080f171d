"""``rocketq admin`` send timings through the real producer: clusterRT (each broker, through the topic
named after it) and checkMsgSendRT (one topic's queues in turn). The times are what a producer sees:
each send's round trip, one after the other."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import click

from rocketq.admin.options import client_config, json_option, namesrv_option, run
from rocketq.admin.render import emit
from rocketq.client import Message, MessageQueue, MQClientError, Producer, ProducerConfig
from rocketq.common.errors import RocketqError

TIMING_GROUP = "TOOLS_RT_PRODUCER"


@dataclass(frozen=True, slots=True)
class Timed:
    queue: MessageQueue
    ok: bool
    result: str  # the send status, or the error
    rt_ms: float


async def _timed_sends(
    producer: Producer, topic: str, queues: Sequence[MessageQueue], amount: int, size: int
) -> list[Timed]:
    """``amount`` sends of ``size`` bytes to ``queues`` in turn, each timed."""
    body = b"x" * size
    timed = []
    for index in range(amount):
        wanted = queues[index % len(queues)]

        def chosen(
            available: Sequence[MessageQueue], _message: Message, _arg: object, wanted: MessageQueue = wanted
        ) -> MessageQueue:
            return wanted if wanted in available else available[0]

        began = time.perf_counter()
        try:
            result = await producer.send_orderly(Message(topic, body), selector=chosen)
            outcome = Timed(result.message_queue, True, result.status.value, 0.0)
        except RocketqError as exc:
            outcome = Timed(wanted, False, str(exc), 0.0)
        elapsed_ms = (time.perf_counter() - began) * 1000
        timed.append(Timed(outcome.queue, outcome.ok, outcome.result, elapsed_ms))
    return timed


def _run_producer(namesrv: str, work: Callable[[Producer], Awaitable[list[Timed]]]) -> list[Timed]:
    config = client_config(namesrv)

    async def main() -> list[Timed]:
        async with Producer(ProducerConfig(group=TIMING_GROUP, client=config)) as producer:
            return await work(producer)

    try:
        return asyncio.run(main())
    except RocketqError as exc:
        raise click.ClickException(str(exc)) from exc


amount_option = click.option("-a", "--amount", type=click.IntRange(min=1), default=100, show_default=True, help="sends")
size_option = click.option(
    "-s", "--size", type=click.IntRange(min=1), default=128, show_default=True, help="body bytes"
)


@click.command("checkMsgSendRT")
@namesrv_option
@click.option("-t", "--topic", required=True)
@amount_option
@size_option
@json_option
def check_msg_send_rt(namesrv: str, topic: str, amount: int, size: int, as_json: bool) -> None:
    """Send messages to a topic's queues in turn and show each send's round trip, then the average."""

    async def work(producer: Producer) -> list[Timed]:
        queues = await producer.fetch_publish_queues(topic)
        if not queues:
            raise MQClientError(f"topic {topic} has no writable queue")
        return await _timed_sends(producer, topic, queues, amount, size)

    timed = _run_producer(namesrv, work)
    average = sum(t.rt_ms for t in timed) / len(timed)
    documents = [
        {
            "broker": t.queue.broker_name,
            "queueId": t.queue.queue_id,
            "sendResult": t.ok,
            "result": t.result,
            "rtMs": round(t.rt_ms, 3),
        }
        for t in timed
    ]
    if as_json:
        emit(True, {"sends": documents, "avgRtMs": round(average, 3)})
        return
    emit(
        False,
        {},
        ["#Broker Name", "#QID", "#Send Result", "#RT(ms)"],
        [[d["broker"], d["queueId"], d["sendResult"], f"{d['rtMs']:.3f}"] for d in documents],
    )
    click.echo(f"Avg RT: {average:.3f} ms")


@click.command("clusterRT")
@namesrv_option
@click.option("-c", "--cluster", help="only this cluster's brokers")
@amount_option
@size_option
@json_option
def cluster_rt(namesrv: str, cluster: str | None, amount: int, size: int, as_json: bool) -> None:
    """Each master broker's send round trip: ``amount`` sends through the topic named after the broker
    (brokerTopicEnable), their average and how many failed."""
    info = run(namesrv, lambda a: a.cluster_info())
    clusters = {name: c for c, names in info.cluster_addr_table.items() if cluster in (None, c) for name in names}
    if cluster and not clusters:
        raise click.ClickException(f"cluster {cluster!r} is unknown to the name servers")

    async def work(producer: Producer) -> list[Timed]:
        timed: list[Timed] = []
        for broker in sorted(clusters):
            queues = [q for q in await producer.fetch_publish_queues(broker) if q.broker_name == broker]
            if not queues:
                raise MQClientError(f"broker {broker} has no topic named after it (brokerTopicEnable=false?)")
            timed += await _timed_sends(producer, broker, queues, amount, size)
        return timed

    timed = _run_producer(namesrv, work)
    documents = []
    for broker in sorted(clusters):
        mine = [t for t in timed if t.queue.broker_name == broker]
        good = [t for t in mine if t.ok]
        documents.append(
            {
                "cluster": clusters[broker],
                "broker": broker,
                "rtMs": round(sum(t.rt_ms for t in good) / len(good), 3) if good else None,
                "successCount": len(good),
                "failCount": len(mine) - len(good),
            }
        )
    emit(
        as_json,
        documents,
        ["#Cluster Name", "#Broker Name", "#RT(ms)", "#successCount", "#failCount"],
        [list(d.values()) for d in documents],
    )


TIMING_COMMANDS = (check_msg_send_rt, cluster_rt)
