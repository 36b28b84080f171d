from __future__ import annotations

import asyncio
import re
import signal
import sys
from pathlib import Path

from rocketq.protocol import RequestCode, ResponseCode, make_request
from rocketq.remoting import RemotingClient
from rocketq.remoting.connection import next_opaque

LISTENING = re.compile(rb"name server listening on 127\.0\.0\.1:(\d+)")


async def test_python_m_rocketq_namesrv_serves_and_stops_on_sigterm(tmp_path: Path) -> None:
    properties = tmp_path / "namesrv.properties"
    properties.write_text("bindAddress=127.0.0.1\nlistenPort=9876\nrocketmqHome=/opt/rocketmq\n")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rocketq.namesrv", "-c", str(properties), "-p", "0", stderr=asyncio.subprocess.PIPE
    )
    assert process.stderr is not None
    try:
        async with asyncio.timeout(10):
            while True:
                line = await process.stderr.readline()
                assert line, "the name server exited before listening"
                if match := LISTENING.search(line):
                    break
        client = RemotingClient()
        try:
            request = make_request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, opaque=next_opaque())
            response = await client.invoke(f"127.0.0.1:{int(match.group(1))}", request, 3)
            assert response.code == ResponseCode.SUCCESS and response.body == b'{"topicList":[]}'
        finally:
            await client.aclose()
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(10):
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
