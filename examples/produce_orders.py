"""Send orders to the ``orders`` topic, for the Spark examples: JSON bodies, the region as the tag.

    python examples/produce_orders.py --name-server 127.0.0.1:9876 --count 5000 --rate 500

Each order: ``{"orderId": "o-17", "amount": 12.5, "eventTime": "2026-11-26T10:15:02.123Z"}``; its event
time is a little in the past (up to ``--late-seconds``), as events that arrive late are.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import time

from rocketq.client import Message, SyncAdminClient, SyncProducer

REGIONS = ("eu", "us", "asia")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name-server", default="127.0.0.1:9876")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--rate", type=float, default=500.0, help="orders per second")
    parser.add_argument("--late-seconds", type=float, default=20.0)
    args = parser.parse_args()
    with SyncAdminClient(args.name_server) as admin:
        if args.topic not in admin.topic_list():
            admin.update_topic(args.topic, read_queues=4, write_queues=4)
    began = time.monotonic()
    with SyncProducer(group="order-producer", namesrv_addr=args.name_server) as producer:
        for n in range(args.count):
            event_time = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=random.uniform(0, args.late_seconds))
            order = {
                "orderId": f"o-{n}",
                "amount": round(random.uniform(1, 200), 2),
                "eventTime": event_time.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            }
            producer.send(
                Message(args.topic, json.dumps(order).encode(), tags=random.choice(REGIONS), keys=order["orderId"])
            )
            ahead = began + (n + 1) / args.rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
    print(f"sent {args.count} orders to {args.topic}")


if __name__ == "__main__":
    main()
