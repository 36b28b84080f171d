"""The per-send work of a producer and of a broker, with and without ACL, in a loop that callgrind can
count: instruction counts do not swing with the host's load as times do.

One side, ``sends`` times: ``client_plain`` builds a SEND_MESSAGE_V2 (12 ext fields, a 100-byte body)
as the producer does and encodes its frame; ``client_acl`` signs it in between (``rocketq.acl.sign``);
``broker_plain`` decodes a frame of it; ``broker_acl`` decodes a signed one and runs the broker's check
(``BrokerAcl.check``, with the rules of ``rocketq bench acl``). Run each side with 0 and with N sends;
the difference of the two counts over N is what one send costs::

    for n in 0 2000; do
      OPENBLAS_NUM_THREADS=1 ROCKETQ_NATIVE=required valgrind --tool=callgrind \\
        --callgrind-out-file=cg.broker_acl.$n .venv/bin/python bench/acl_instructions.py broker_acl $n
    done

(``OPENBLAS_NUM_THREADS=1``: numpy's idle BLAS threads spin, which callgrind counts as work.)
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from rocketq.acl import Credentials, parse_acl_yaml, sign
from rocketq.bench.acl import ACL_FILE, PRODUCER_KEYS
from rocketq.broker.acl import BrokerAcl
from rocketq.client import ClientConfig, ProducerConfig
from rocketq.client.message import MessageQueue
from rocketq.client.send_checks import SendSettings, send_request
from rocketq.protocol.frame import FrameDecoder, encode_frame
from rocketq.remoting import Connection

SIDES = ("client_plain", "client_acl", "broker_plain", "broker_acl")
PROPERTIES = "UNIQ_KEY\x01AC110001000018B4AAC2D6B2A10000\x02WAIT\x01true\x02"
MAX_FRAME = 1 << 24


async def run(side: str, sends: int) -> None:
    config = ProducerConfig(group="bench-acl", client=ClientConfig(namesrv_addr="127.0.0.1:9876"))
    queue = MessageQueue("BenchAcl", "broker-a", 0)
    credentials = Credentials(*PRODUCER_KEYS)
    body = b"x" * 100
    signed = side.endswith("_acl")
    if side.startswith("client"):
        for _ in range(sends):
            request = send_request(SendSettings(config), queue, body, PROPERTIES, 0, 0)
            if signed:
                sign(request, credentials)
            encode_frame(request)
        return
    acl = BrokerAcl(Path("plain_acl.yml"), parse_acl_yaml(ACL_FILE))
    connection = Connection(lambda request, connection: None, max_frame_size=MAX_FRAME)
    connection.remote_address = "127.0.0.1:45678"
    request = send_request(SendSettings(config), queue, body, PROPERTIES, 0, 0)
    if signed:
        sign(request, credentials)
    frame = encode_frame(request)
    decoder = FrameDecoder(max_frame_size=MAX_FRAME)
    for _ in range(sends):
        (received,) = decoder.decode(frame)
        if signed and acl.check(received, connection) is not None:
            raise SystemExit("the check refused a correctly signed send")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("side", choices=SIDES)
    parser.add_argument("sends", type=int)
    arguments = parser.parse_args()
    asyncio.run(run(arguments.side, arguments.sends))


if __name__ == "__main__":
    main()
