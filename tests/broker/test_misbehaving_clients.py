"""A client that asks for big answers and never reads them, against ``rocketq up``'s shape: a NameServer
and a Broker in one child process. The broker's memory stays bounded and the NameServer keeps answering."""

from __future__ import annotations

import asyncio
import os
import struct
from pathlib import Path

from rocketq.client import ClientConfig, Message, Producer, ProducerConfig
from rocketq.client.admin import AdminClient
from rocketq.common.message_id import parse_offset_message_id
from rocketq.protocol import RequestCode, encode_frame, make_request
from rocketq.remoting.connection import next_opaque
from rocketq.testing.cluster_process import ClusterProcess

MESSAGE_SIZE = 3 * 1024 * 1024
REQUESTS = 550  # 1.65 GB of answers
SETUP_TIMEOUT_S = 30.0
ANSWER_WAIT_S = 30.0
"""How long one answer may take once the client reads: a bound for a hang, not for the reading's speed
(all 550 took 39 s at load 17 on 2 cores, more on a busier host: no bound on the whole)."""


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


async def test_never_reading_client_costs_bounded_memory_and_starves_nobody(tmp_path: Path) -> None:
    with ClusterProcess(tmp_path, max_message_size=4 * 1024 * 1024) as cluster:
        async with AdminClient(cluster.namesrv_addr, timeout_s=SETUP_TIMEOUT_S) as admin:
            await admin.update_topic("Flood", cluster="DefaultCluster", read_queues=1, write_queues=1)
        # setting up may take more than the default timeouts on a loaded host (this 3 MiB send: 1.2 s at load 17)
        client = ClientConfig(namesrv_addr=cluster.namesrv_addr, request_timeout_s=SETUP_TIMEOUT_S)
        config = ProducerConfig(group="flood-pg", client=client, send_msg_timeout_s=SETUP_TIMEOUT_S)
        async with Producer(config) as producer:
            result = await producer.send(Message("Flood", os.urandom(MESSAGE_SIZE)))
        host, port, offset = parse_offset_message_id(result.offset_msg_id)
        before = rss_bytes(cluster.pid)

        reader, writer = await asyncio.open_connection(host, port)
        view = [
            make_request(RequestCode.VIEW_MESSAGE_BY_ID, opaque=next_opaque(), ext_fields={"offset": str(offset)})
            for _ in range(REQUESTS)
        ]
        writer.write(b"".join(encode_frame(request) for request in view))
        peak = before
        async with AdminClient(cluster.namesrv_addr, timeout_s=3) as admin:
            for _ in range(20):  # the NameServer in the same process answers throughout
                route = await admin.topic_route("Flood")
                assert route.broker_datas
                peak = max(peak, rss_bytes(cluster.pid))
                await asyncio.sleep(0.05)
        assert peak - before < 200 * 1024 * 1024, f"RSS grew by {(peak - before) >> 20} MiB"

        for _ in range(REQUESTS):  # reading now, it gets every answer
            async with asyncio.timeout(ANSWER_WAIT_S):
                (length,) = struct.unpack(">i", await reader.readexactly(4))
                assert length > MESSAGE_SIZE
                await reader.readexactly(length)
        writer.close()
