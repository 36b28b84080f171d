"""Idempotent sends (rocketq-only): a send marked ``rqIdempotent`` is stored once per broker within a
window; a repeat of its UNIQ_KEY is answered with the first store's result (same msgId, queueId and
queueOffset) instead of being stored again. docs/idempotent-send.md says what this does and does not
promise.

A message is identified by its topic and UNIQ_KEY (a batch by its topic and all its messages' UNIQ_KEYs).
How a repeat is recognised, in order:

1. The first store is still in progress (waiting for its fsync, say, while its producer timed out and
   retried): the repeat waits for it and answers with its result; if it stored nothing, the repeat is
   stored as a first send.
2. Memory: the results of recent idempotent stores, each kept for ``window`` from its store (by the
   injected ``clock``), at most ``max_entries`` of them: beyond that the oldest is forgotten first.
3. The store's index (the UNIQ_KEY of every message is indexed): a message stored within the window
   but no longer in memory (evicted by the bound, or stored before the broker restarted, even after a
   crash, since recovery re-indexes the CommitLog) is found there and the answer rebuilt from its
   record. The index is searched by store time, so the window also holds across restarts.

Sends without the mark take none of this: the send handler (``rocketq.broker.handlers.send``) hands
only marked ones to ``IdempotentSends.send_once``, and stores the others itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from rocketq.broker.context import reply
from rocketq.broker.handlers.send import send_answer
from rocketq.common.message import SCHEDULE_TOPIC, Property, find_property
from rocketq.common.message_id import joined_offset_message_ids
from rocketq.protocol import RemoteProtocolError, RemotingCommand, RequestCode, ResponseCode, decode_batch
from rocketq.protocol.headers import SendMessageRequestHeader
from rocketq.remoting import Connection, ServerHandler, awaited_answer
from rocketq.store import MessageStore

log = logging.getLogger(__name__)

STORED_CODES = frozenset(
    {
        ResponseCode.SUCCESS,
        ResponseCode.FLUSH_DISK_TIMEOUT,
        ResponseCode.FLUSH_SLAVE_TIMEOUT,
        ResponseCode.SLAVE_NOT_AVAILABLE,
    }
)
"""Answers of a send whose message was stored (the others were appended, their fsync or slave late)."""
_TRUE = ("true", "1")
_INDEX_CANDIDATES = 8  # records of one UNIQ_KEY read from the index: the oldest in the window is the first store

Answer = tuple[int, str, int, int]
"""What every repeat is answered with: the first store's response code, msgId (offset ids, comma-joined
for a batch), queueId and queueOffset. (About 400 bytes an entry in memory with its key and expiry.)"""


@dataclass(frozen=True, slots=True)
class Identity:
    """What makes two sends the same: the topic and the messages' UNIQ_KEYs (one, or a batch's)."""

    topic: str
    unique_keys: tuple[str, ...]
    delayed: bool  # stored in SCHEDULE_TOPIC_XXXX first: look for it there too

    @property
    def key(self) -> str:
        """The key of memory: topic and UNIQ_KEY; for a batch also how many messages it has and a hash of
        all their keys (a different batch that starts with the same message is no repeat)."""
        keys = self.unique_keys
        if len(keys) == 1:
            return f"{self.topic}\x01{keys[0]}"
        return f"{self.topic}\x01{keys[0]}\x01{len(keys)}\x01{hash(keys):x}"


class IdempotentSends:
    """The window of one broker. Use from the broker's event loop."""

    def __init__(self, store: MessageStore, *, window_ms: int, max_entries: int, clock: Callable[[], float]) -> None:
        """``window_ms`` 0 turns idempotent sends off (marked sends are stored like any other);
        ``clock`` gives wall-clock seconds (``time.time``), compared with the store times of records."""
        self._store = store
        self.window_ms = window_ms
        self.max_entries = max(1, max_entries)
        self._clock = clock
        self._remembered: OrderedDict[str, tuple[float, Answer]] = OrderedDict()  # key -> (expires at s, answer)
        self._pending: dict[str, asyncio.Future[Answer | None]] = {}
        self.repeats_from_memory = 0
        self.repeats_from_index = 0
        self.evicted = 0

    # -- the request path -------------------------------------------------------------------------------

    def marks(self, header: SendMessageRequestHeader) -> bool:
        """Whether the send of ``header`` is one this window takes: marked idempotent (its
        ``rq_idempotent``, the ``IDEMPOTENT_SEND_FIELD`` read with the rest of the header), the window on."""
        return self.window_ms > 0 and header.rq_idempotent in _TRUE

    async def send_once(
        self, inner: ServerHandler, request: RemotingCommand, connection: Connection, header: SendMessageRequestHeader
    ) -> RemotingCommand | None:
        """The answer to a send this window ``marks`` (``header``: its header, read): the first store's
        when it is a repeat, else ``inner``'s (the send handler's, which stores it)."""
        try:
            identity = identity_of(request, header)
        except ValueError as exc:
            return reply(request, ResponseCode.MESSAGE_ILLEGAL, str(exc))
        if identity is None:  # malformed, or a transaction's half message: the send handler decides
            return await awaited_answer(inner(request, connection))
        key = identity.key
        while (pending := self._pending.get(key)) is not None:
            answer = await asyncio.shield(pending)
            if answer is not None:
                self.repeats_from_memory += 1
                return answered(request, answer)
            # the first attempt stored nothing: this one is a first send (unless another got there first)
        answer = self._recall(identity)
        if answer is not None:
            return answered(request, answer)
        waiting: asyncio.Future[Answer | None] = asyncio.get_running_loop().create_future()
        self._pending[key] = waiting
        answer = None
        try:
            response = await awaited_answer(inner(request, connection))
            if response is not None and response.code in STORED_CODES:
                answer = answer_of(response)
                self._remember(key, answer, self._clock())
            return response
        finally:
            del self._pending[key]
            waiting.set_result(answer)

    # -- memory and index ---------------------------------------------------------------------------------

    def _remember(self, key: str, answer: Answer, stored_at: float) -> None:
        """Keep ``answer`` until the window of a store made at ``stored_at`` (clock seconds) ends."""
        remembered = self._remembered
        remembered[key] = (stored_at + self.window_ms / 1000, answer)
        remembered.move_to_end(key)
        while len(remembered) > self.max_entries:
            remembered.popitem(last=False)
            self.evicted += 1

    def _forget_expired(self, now: float) -> None:
        remembered = self._remembered
        while remembered:
            key, (expires, _) = next(iter(remembered.items()))
            if expires > now:
                return
            del remembered[key]

    def _recall(self, identity: Identity) -> Answer | None:
        """The first store's answer from memory, else rebuilt from the index; None when there was none
        within the window."""
        now = self._clock()
        self._forget_expired(now)
        entry = self._remembered.get(identity.key)
        if entry is not None and entry[0] > now:
            self.repeats_from_memory += 1
            return entry[1]
        found = self._from_index(identity, int(now * 1000) - self.window_ms)
        if found is None:
            return None
        answer, stored_at_ms = found
        self.repeats_from_index += 1
        self._remember(identity.key, answer, stored_at_ms / 1000)
        return answer

    def _from_index(self, identity: Identity, since_ms: int) -> tuple[Answer, int] | None:
        """The answer to the first store since ``since_ms`` (ms) of the message(s) and its store time."""
        store, topic, first_key = self._store, identity.topic, identity.unique_keys[0]
        found = store.query_message(topic, first_key, _INDEX_CANDIDATES, since_ms, unique=True)
        if identity.delayed:
            waiting = store.query_message(SCHEDULE_TOPIC, first_key, _INDEX_CANDIDATES, since_ms, unique=True)
            found += [r for r in waiting if find_property(r.properties, Property.REAL_TOPIC) == topic]
        if not found:
            return None
        records = [min(found, key=lambda r: r.physical_offset)]
        for unique_key in identity.unique_keys[1:]:  # a batch's records follow each other in the CommitLog
            after = records[-1]
            record = store.lookup_message(after.physical_offset + after.total_size)
            if record is None or find_property(record.properties, Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) != unique_key:
                log.info("idempotent batch %s: the stored batch differs from this one, storing it", identity.key)
                return None
            records.append(record)
        first = records[0]
        queue_id = first.queue_id  # the queue the producer chose, which a delayed message keeps in REAL_QID
        if first.topic == SCHEDULE_TOPIC:
            queue_id = int(find_property(first.properties, Property.REAL_QUEUE_ID) or queue_id)
        offset_ids = joined_offset_message_ids(first.store_host, [r.physical_offset for r in records])
        return (ResponseCode.SUCCESS, offset_ids, queue_id, first.queue_offset), first.store_timestamp

    # -- statistics ---------------------------------------------------------------------------------------

    def stats(self) -> dict[str, str]:
        """Figures for GET_BROKER_RUNTIME_INFO."""
        return {
            "idempotentSendWindowMs": str(self.window_ms),
            "idempotentSendEntries": str(len(self._remembered)),
            "idempotentSendMaxEntries": str(self.max_entries),
            "idempotentSendRepeatsFromMemory": str(self.repeats_from_memory),
            "idempotentSendRepeatsFromIndex": str(self.repeats_from_index),
            "idempotentSendEvicted": str(self.evicted),
        }


def identity_of(request: RemotingCommand, header: SendMessageRequestHeader) -> Identity | None:
    """What identifies the message(s) of a marked send (``header``: its header); None when its body does
    not parse (the send handler then answers with the problem) or it carries a transaction's half
    message (not deduplicated).

    Raises:
        ValueError: A message has no UNIQ_KEY to be recognised by.
    """
    try:
        batch = request.code == RequestCode.SEND_BATCH_MESSAGE or header.batch
        properties = [item.properties for item in decode_batch(request.body)] if batch else [header.properties or ""]
    except RemoteProtocolError:
        return None
    if not properties:
        return None
    if find_property(properties[0], Property.TRANSACTION_PREPARED) in _TRUE:
        return None
    keys = tuple(find_property(text, Property.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or "" for text in properties)
    if not all(keys):
        raise ValueError("an idempotent send needs a UNIQ_KEY property on every message")
    delay = find_property(properties[0], Property.DELAY_TIME_LEVEL) or ""
    return Identity(header.topic, keys, delayed=not batch and delay.isdigit() and int(delay) > 0)


def answer_of(response: RemotingCommand) -> Answer:
    """What a send's response says, to answer its repeats with."""
    fields = response.ext_fields
    return response.code, fields["msgId"], int(fields["queueId"]), int(fields["queueOffset"])


def answered(request: RemotingCommand, answer: Answer) -> RemotingCommand:
    """The response to a repeat: the first store's answer (``send_answer``), for this request."""
    code, msg_id, queue_id, queue_offset = answer
    return send_answer(request, code, msg_id, queue_id, queue_offset)
