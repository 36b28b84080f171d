"""What the metrics add to one request on the broker's loop, without the network or the host's swings.

What a remoting server with metrics on adds to each answer, ``--calls`` times: two clock reads and
``RpcLatency.observe_answer`` (a send code, observed in ``rocketmq_rpc_latency`` and
``rocketmq_send_cost_time``; another code, in the first only); and ``PutTraffic.record``, the count every
accepted send adds whether metrics are on or not. Best of three runs each, in nanoseconds; run it with
``ROCKETQ_NATIVE=required`` for the compiled build (the server's part is compiled there).

    .venv/bin/python bench/metrics_overhead.py
"""

from __future__ import annotations

import argparse
import json
import time

from rocketq.broker.put_traffic import PutTraffic
from rocketq.metrics.latency import RpcLatency
from rocketq.native import STATUS
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode, make_response


def observe(latency: RpcLatency, request: RemotingCommand, response: RemotingCommand, calls: int) -> float:
    """Nanoseconds per answer that the server's observer call costs, clock reads included."""
    began = time.perf_counter()
    for _ in range(calls):
        started = time.perf_counter()
        latency.observe_answer(request, response, time.perf_counter() - started)
    return (time.perf_counter() - began) / calls * 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    calls = parser.parse_args().calls
    request = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields={"a": "group", "b": "TopicA"})
    response = make_response(request, ResponseCode.SUCCESS)

    pull = RemotingCommand(code=RequestCode.PULL_MESSAGE, ext_fields={})
    pulled = make_response(pull, ResponseCode.SUCCESS)
    send = min(observe(RpcLatency(), request, response, calls) for _ in range(3))
    other = min(observe(RpcLatency(), pull, pulled, calls) for _ in range(3))
    traffic = PutTraffic()
    began = time.perf_counter()
    for _ in range(calls):
        traffic.record("TopicA", 1, 160)
    record = (time.perf_counter() - began) / calls * 1e9
    result = {
        "compiled": STATUS.compiled,
        "observed_send_ns": round(send),
        "observed_other_ns": round(other),
        "put_traffic_record_ns": round(record),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
