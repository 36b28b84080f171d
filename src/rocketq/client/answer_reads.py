"""A client's read of an answer's extFields: the few keys it wants, as ``response.ext_fields.get(key)``
gives them, read straight from the JSON text the answer kept when that decode takes it (no dict), else
from ``ext_fields``. One reader for the send's answer (``send_outcome.send_answer_fields``) and the
pull's (``pull.pull_answer_fields``); the Structs and their decoders are in
``rocketq.client.answer_fields`` (interpreted), this reader is compiled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from rocketq.client.answer_fields import answer_values
from rocketq.client.errors import MQClientError
from rocketq.protocol import ProtocolError, RemotingCommand


def answer_texts(
    response: RemotingCommand, address: str, decode: Callable[[Any], Any], keys: tuple[str, ...], what: str
) -> tuple[str | None, ...]:
    """``response``'s extFields ``keys`` (in the order of the Struct ``decode`` makes: its fields' wire
    names) as text, None when absent: from the extFields' JSON text when the answer kept it (a client's
    connections do), else (or when that decode refuses: a value that is not text) from ``ext_fields``.

    Raises:
        MQClientError: the extFields are malformed (``ext_fields`` refuses them); ``what`` answer and
            ``address`` named.
    """
    text: Any = response.ext_json  # (a msgspec.Raw)
    if text is not None:
        try:
            values: tuple[str | None, ...] = answer_values(decode(text))
            return values
        except (msgspec.DecodeError, UnicodeDecodeError):  # (ext_fields below reads it, or says what is wrong)
            pass
    try:
        fields = response.ext_fields
    except ProtocolError as exc:
        raise MQClientError(f"malformed {what} response from {address}: {exc}") from exc
    return tuple([fields.get(key) for key in keys])
