"""What the metrics add to one request on the broker's loop, without the network or the host's swings.

A handler that answers at once is driven ``--calls`` times as the remoting server drives it (its
coroutine sent once), bare and wrapped by ``rocketq.metrics.latency.timed_handlers`` (a send code, timed
into ``rocketmq_rpc_latency`` and ``rocketmq_send_cost_time``; another code, into the first only); and
``PutTraffic.record``, the count every accepted send adds whether metrics are on or not. Best of three
runs each, in nanoseconds; run it with ``ROCKETQ_NATIVE=required`` for the compiled build.

    .venv/bin/python bench/metrics_overhead.py
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable

from rocketq.broker.put_traffic import PutTraffic
from rocketq.metrics.latency import RpcLatency, timed_handlers
from rocketq.native import STATUS
from rocketq.protocol import DEFAULT_MAX_FRAME_SIZE, RemotingCommand, RequestCode, ResponseCode, make_response
from rocketq.remoting import Connection

Handler = Callable[[RemotingCommand, Connection], Awaitable[RemotingCommand | None]]


def drive(handler: Handler, request: RemotingCommand, calls: int) -> float:
    """Nanoseconds per call of ``handler``, its coroutine run to completion at once."""
    connection = Connection(lambda request, connection: None, max_frame_size=DEFAULT_MAX_FRAME_SIZE)
    began = time.perf_counter()
    for _ in range(calls):
        coroutine = handler(request, connection)
        with contextlib.suppress(StopIteration):
            coroutine.send(None)  # type: ignore[attr-defined]
    return (time.perf_counter() - began) / calls * 1e9


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    calls = parser.parse_args().calls
    request = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields={"a": "group", "b": "TopicA"})
    response = make_response(request, ResponseCode.SUCCESS)

    async def answer(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        return response

    timed = timed_handlers({RequestCode.SEND_MESSAGE_V2: answer, RequestCode.PULL_MESSAGE: answer}, RpcLatency())
    bare = min(drive(answer, request, calls) for _ in range(3))
    send = min(drive(timed[RequestCode.SEND_MESSAGE_V2], request, calls) for _ in range(3))  # type: ignore[arg-type]
    other = min(drive(timed[RequestCode.PULL_MESSAGE], request, calls) for _ in range(3))  # type: ignore[arg-type]
    traffic = PutTraffic()
    began = time.perf_counter()
    for _ in range(calls):
        traffic.record("TopicA", 1, 160)
    record = (time.perf_counter() - began) / calls * 1e9
    result = {
        "compiled": STATUS.compiled,
        "bare_handler_ns": round(bare),
        "timed_send_extra_ns": round(send - bare),
        "timed_other_extra_ns": round(other - bare),
        "put_traffic_record_ns": round(record),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    asyncio.run(main())  # (on a running loop, as in a broker: a Connection needs one)
