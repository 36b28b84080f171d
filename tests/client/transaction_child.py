"""A transaction producer that dies in its local transaction: it sends one half message, says so, and
blocks until the test SIGKILLs it. Usage: transaction_child.py NAMESRV_ADDR TOPIC GROUP."""

from __future__ import annotations

import asyncio
import sys
import threading

from rocketq.client import Message, TransactionProducer, TransactionState


def in_the_local_transaction(message: Message, arg: object) -> TransactionState:
    print("in the local transaction", flush=True)
    threading.Event().wait()  # until killed
    return TransactionState.COMMIT


async def main(namesrv_addr: str, topic: str, group: str) -> None:
    async with TransactionProducer(
        local_transaction=in_the_local_transaction,
        check=lambda m: TransactionState.UNKNOWN,
        group=group,
        namesrv_addr=namesrv_addr,
    ) as producer:
        await producer.send_message_in_transaction(Message(topic, b"from a producer that died"))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
