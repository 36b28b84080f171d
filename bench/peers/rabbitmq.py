"""RabbitMQ for the peer comparison: a scratch server on free ports, and durable publishing with
publisher confirms, one message at a time.

Needs ``rabbitmq-server`` (``apt-get install rabbitmq-server``) and pika (``/tmp/peers/bin/pip install
pika``). The server runs as a node of its own (its own name, ports, Mnesia and log directories in a
scratch directory, and its own epmd on a free port), so it touches no system-wide RabbitMQ and is
stopped, epmd included, when the block ends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

START_TIMEOUT_S = 90.0
QUEUE = "bench"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"
"""The server script itself (Debian's ``/usr/sbin/rabbitmq-server`` wrapper switches to the system's
``rabbitmq`` user and its directories)."""


def installed() -> bool:
    return os.access(SERVER, os.X_OK)


@contextmanager
def rabbitmq_server() -> Iterator[Any]:
    """A started RabbitMQ node; yields a pika ``BlockingConnection`` to it."""
    import pika

    scratch = tempfile.mkdtemp(prefix="peer-rabbitmq-")
    port, dist_port, epmd_port = free_port(), free_port(), free_port()
    env = {
        **os.environ,
        "RABBITMQ_NODENAME": f"peerbench{port}@localhost",
        "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
        "RABBITMQ_NODE_PORT": str(port),
        "RABBITMQ_DIST_PORT": str(dist_port),
        "ERL_EPMD_PORT": str(epmd_port),
        "RABBITMQ_MNESIA_BASE": f"{scratch}/mnesia",
        "RABBITMQ_LOG_BASE": f"{scratch}/log",
        "RABBITMQ_CONFIG_FILE": f"{scratch}/rabbitmq.conf",
        "RABBITMQ_ENABLED_PLUGINS_FILE": f"{scratch}/enabled_plugins",
        "RABBITMQ_ENABLED_PLUGINS": "",
        "HOME": scratch,  # the Erlang cookie
    }
    with open(f"{scratch}/rabbitmq.conf", "w") as config:
        config.write("loopback_users = none\n")
    with open(f"{scratch}/enabled_plugins", "w") as plugins:
        plugins.write("[].\n")
    epmd = subprocess.Popen(["epmd", "-port", str(epmd_port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    process = subprocess.Popen(
        [SERVER], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        parameters = pika.ConnectionParameters(host="127.0.0.1", port=port, heartbeat=0)  # idle between shapes
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                logs = "".join(path.read_text()[-2000:] for path in Path(scratch, "log").glob("*.log"))
                raise RuntimeError(f"rabbitmq-server exited with code {process.returncode}: {logs}")
            try:
                connection = pika.BlockingConnection(parameters)
                break
            except pika.exceptions.AMQPConnectionError as error:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"rabbitmq-server refused connections for {START_TIMEOUT_S:.0f} s") from error
                time.sleep(0.5)
        try:
            yield connection
        finally:
            connection.close()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        epmd.kill()
        epmd.wait()
        shutil.rmtree(scratch, ignore_errors=True)


def confirmed_rate(connection: Any, size: int, seconds: float) -> float:
    """Persistent messages per second published to a durable queue, each confirmed before the next."""
    import pika

    channel = connection.channel()
    try:
        channel.queue_declare(queue=QUEUE, durable=True)
        channel.queue_purge(queue=QUEUE)
        channel.confirm_delivery()
        body = b"x" * size
        persistent = pika.BasicProperties(delivery_mode=pika.DeliveryMode.Persistent)
        sent = 0
        began = time.perf_counter()
        deadline = began + seconds
        while time.perf_counter() < deadline:
            channel.basic_publish(exchange="", routing_key=QUEUE, body=body, properties=persistent)
            sent += 1
        return sent / (time.perf_counter() - began)
    finally:
        channel.close()
