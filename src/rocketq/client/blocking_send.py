"""``SyncProducer.send`` without the hand-over: the first attempt of a send is made on the caller's own
thread, over a blocking connection to the broker, when everything it needs is at hand.

Handing a call to the producer's loop thread costs two thread wake-ups (the loop's, then the caller's),
more than the rest of a send on this path. So when the topic's route is cached, its broker's address is
known and no other thread is using the blocking connections, the caller does what ``Producer`` does for
one attempt, with ``Producer``'s own functions: the attempt made ready as on the loop
(``_first_attempt``: the message and its request, the queue with latency fault tolerance, the signature,
the time limits), its request written on a blocking socket (``rocketq.remoting.blocking``), and what
follows its answer decided as on the loop (``_first_outcome``: the result, or the retries).

Everything else is the loop's, as before: a send with no cached route or no address, one made while
another thread is in ``SyncProducer.send`` too (sends from several threads meet on the loop, where
auto-batching gathers them: at 4 threads, sending alone over the blocking connection while the others
batched on the loop was slower than all of them on the loop), one that auto-batching would hold for the
next batch (a request to its topic is in flight on the loop), and every attempt after a failed first one (a lost or
timed-out answer, a refusal): the loop's ``_send_with_retries`` goes on from that attempt, with the
send's deadline, so the retry policy stays in one place.

State the caller's thread shares with the loop thread: the unique id generator (an atomic counter), the
queue round-robin index (``TopicPublishInfo.next_index``: at worst two sends pick the same queue), the
latency fault table and the route and address tables (single dictionary reads and writes, and in the
fault table single attribute stores, which the GIL keeps whole, compiled or not).
"""

from __future__ import annotations

import threading
import time

from rocketq.client.message import Message, SendResult
from rocketq.client.producer import LoopSend, Producer
from rocketq.protocol import RemotingCommand
from rocketq.remoting import RemotingError
from rocketq.remoting.blocking import BlockingConnection


class BlockingSender:
    """The blocking first attempts of one producer's sends, with one connection per broker address.

    Thread safety: any thread. A caller brackets its whole send, the loop's part included, with
    ``enter()`` and ``leave()``: a send made while another caller is inside goes to the loop. One send
    at a time uses the connections."""

    def __init__(self, producer: Producer) -> None:
        self._producer = producer
        self._connections: dict[str, BlockingConnection] = {}
        self._lock = threading.Lock()  # held by the send using the connections
        self._callers = 0  # callers between enter() and leave()
        self._callers_lock = threading.Lock()
        self._closed = False

    # (acquire and release called plainly: compiled, a ``with`` block looks up and calls the lock's
    # __enter__ and __exit__ by name, and a keyword argument goes through the lock's argument parser)

    def enter(self) -> None:
        """A caller's send begins."""
        lock = self._callers_lock
        lock.acquire()
        self._callers += 1
        lock.release()

    def leave(self) -> None:
        """A caller's send has ended (here or on the loop)."""
        lock = self._callers_lock
        lock.acquire()
        self._callers -= 1
        lock.release()

    def send(self, message: Message, timeout: float | None, idempotent: bool | None) -> SendResult | LoopSend:
        """``Producer.send(message, ...)`` made here when it can be: its result; else the coroutine the
        loop must run for the rest (its first attempt made, or all of it). Between ``enter()`` and
        ``leave()``."""
        producer = self._producer
        if self._callers > 1 or not self._lock.acquire(False):  # (False: do not block)
            return producer.send(message, timeout=timeout, idempotent=idempotent)
        try:
            return self._send_here(producer, message, timeout, idempotent)
        finally:
            self._lock.release()

    def _send_here(
        self, producer: Producer, message: Message, timeout: float | None, idempotent: bool | None
    ) -> SendResult | LoopSend:
        topic = message.topic
        info = producer._cached_publish_info(topic)
        instance = producer._instance
        batcher = producer._batcher
        if self._closed or instance is None or info is None or (batcher and batcher.busy(topic)):
            return producer.send(message, timeout=timeout, idempotent=idempotent)
        marked = producer._idempotent(idempotent)
        attempt = producer._first_attempt(message, timeout, producer._settings.retries, marked, info, instance)
        address, command = attempt.address, attempt.command
        if address is None or command is None:  # the loop finds the address (or says why not)
            return producer._send_prepared(attempt.prepared, topic, timeout, attempt.retries)
        connection = self._connections.get(address)
        if connection is None:
            connection = self._connections[address] = BlockingConnection(address)
        began = time.monotonic()  # the attempt's start and the send's deadline's (one clock read)
        answer: RemotingCommand | RemotingError
        try:
            answer = connection.invoke(command, attempt.attempt_s, began)
        except RemotingError as exc:  # no answer
            answer = exc
        return producer._first_outcome(attempt, address, began, answer)

    def close(self) -> None:
        """Close the connections, once the send using them (if any) has ended; later sends go to the loop."""
        with self._lock:
            self._closed = True
            connections = list(self._connections.values())
            self._connections.clear()
        for connection in connections:
            connection.close()
