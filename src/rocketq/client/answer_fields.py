"""The extFields a client reads from the answers of its two most frequent requests (a send's, a pull's),
read straight from the JSON text they came in, into a Struct of the few keys it wants: no dict of every
key, no key strings made.

A client's connections keep a JSON answer's extFields as their text (``RemotingCommand.ext_json``) until
something reads ``ext_fields``. ``send_answer_fields`` and ``pull_answer_fields`` decode that text into
the Structs below (through ``rocketq.client.answer_reads.answer_texts``), whose fields are the values'
text exactly as ``ext_fields.get(key)`` would give it:
a value that is not a JSON string or null (a number, a boolean: ``ext_fields`` would normalise it to
text), or text the decode refuses, sends the read to ``ext_fields`` itself, so the readers
(``send_outcome.send_result``, ``pull.pull_outcome``) see what the dict would have given them
(``tests/client/test_answer_fields.py`` holds them equal).

Interpreted (its Structs: see ``rocketq.native.modules``); the compiled readers call the bound decoders.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec


class SendAnswerFields(msgspec.Struct, gc=False):
    """SendMessageResponseHeader's keys a producer reads (their text; None: absent or null)."""

    msg_id: str | None = msgspec.field(default=None, name="msgId")
    queue_id: str | None = msgspec.field(default=None, name="queueId")
    queue_offset: str | None = msgspec.field(default=None, name="queueOffset")


class PullAnswerFields(msgspec.Struct, gc=False):
    """PullMessageResponseHeader's keys a consumer reads (their text; None: absent or null)."""

    suggest_which_broker_id: str | None = msgspec.field(default=None, name="suggestWhichBrokerId")
    next_begin_offset: str | None = msgspec.field(default=None, name="nextBeginOffset")
    min_offset: str | None = msgspec.field(default=None, name="minOffset")
    max_offset: str | None = msgspec.field(default=None, name="maxOffset")


# strict decoders (a number where text is declared is refused, not converted: ext_fields' job), bound once
decode_send_answer_fields: Final[Callable[[Any], Any]] = msgspec.json.Decoder(SendAnswerFields).decode
"""``SendAnswerFields`` from an answer's extFields text. Raises msgspec.DecodeError (a ValidationError for
a value that is not text) or UnicodeDecodeError."""
decode_pull_answer_fields: Final[Callable[[Any], Any]] = msgspec.json.Decoder(PullAnswerFields).decode
"""``PullAnswerFields`` from an answer's extFields text (raises as ``decode_send_answer_fields``)."""
SEND_ANSWER_KEYS: Final = tuple(field.encode_name for field in msgspec.structs.fields(SendAnswerFields))
"""``SendAnswerFields``' wire names, in its field order."""
PULL_ANSWER_KEYS: Final = tuple(field.encode_name for field in msgspec.structs.fields(PullAnswerFields))
"""``PullAnswerFields``' wire names, in its field order."""
answer_values: Final[Callable[[Any], Any]] = msgspec.structs.astuple
"""A decoded Struct's values in its field order, in one call (compiled code would read each field with a
generic attribute lookup)."""
