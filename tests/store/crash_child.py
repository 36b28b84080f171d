"""Child process for the SIGKILL tests: appends forever, printing each acknowledged put.

Usage: crash_child.py STORE_DIR sync|async START_ID. Prints "id offset size" once a put is
acknowledged (after its fsync with SYNC_FLUSH), until it is killed. Every other batch is put as a
producer's wire batch (``measure_batch`` + ``put_batch``, the compiled append) when the store has it.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from crash_support import child_config

from rocketq.common.message import encode_properties
from rocketq.protocol.batch import BatchItem, encode_batch
from rocketq.store import BatchToStore, FlushDiskType, MessageStore, MessageToStore


def main() -> None:
    root, mode, start = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    config = dataclasses.replace(
        child_config(root),
        flush_disk_type=FlushDiskType.SYNC_FLUSH if mode == "sync" else FlushDiskType.ASYNC_FLUSH,
        flush_interval_consume_queue_ms=30,
    )
    store = MessageStore(config).start()
    out = sys.stdout
    print("ready", flush=True)
    ident = start
    while True:
        batch = [
            MessageToStore(
                topic="Crash",
                queue_id=(ident + n) % 4,
                body=f"payload-{ident + n}-".encode() * (1 + (ident + n) % 17),
                properties=encode_properties({"KEYS": f"id{ident + n}", "TAGS": "t"}),
            )
            for n in range(1 + ident % 3)
        ]
        measured = None
        if ident % 2:
            items = encode_batch([BatchItem(message.body, message.properties) for message in batch])
            wire = BatchToStore(topic="Crash", queue_id=ident % 4, items=items, properties_suffix="CLUSTER\x01crash")
            measured = store.measure_batch(wire)
        put = store.put_batch(measured) if measured is not None else store.put_messages(batch)
        result = store.wait_flushed(put)
        if not result.ok:
            print(f"error {result.status.value}", flush=True)
            return
        for n, (offset, size) in enumerate(zip(result.physical_offsets, result.sizes, strict=True)):
            out.write(f"{ident + n} {offset} {size}\n")
        out.flush()
        ident += len(batch)


if __name__ == "__main__":
    main()
