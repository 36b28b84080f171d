"""GET_BROKER_CONFIG (26) and UPDATE_BROKER_CONFIG (25): a broker's settings under their broker.conf keys,
and changing them while it runs (``rocketq admin getBrokerConfig`` / ``updateBrokerConfig``).

The body of both is Java properties text (``key=value`` lines), as RocketMQ's. An update takes effect at
once for the settings the broker reads on every request (``RUNTIME_KEYS``); any other key is refused,
naming the ones that can change, and nothing is changed: it needs a restart with a new broker.conf. A
broker started from a broker.conf also writes the new values there (the file's other lines kept), so a
restart keeps them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from rocketq.broker.context import BrokerContext, reply
from rocketq.common.settings import SettingError, parse_properties
from rocketq.protocol import RemotingCommand, RequestCode, ResponseCode
from rocketq.remoting import Connection, RequestHandler

log = logging.getLogger(__name__)

RUNTIME_KEYS: Final = frozenset(
    {
        "maxMessageSize",
        "rejectTransactionMessage",
        "longPollingEnable",
        "shortPollingTimeMills",
        "maxTransferBytesOnMessageInMemory",
        "defaultQueryMaxNum",
        "notifyConsumerIdsChangedEnable",
        "transactionCheckInterval",
        "enablePropertyFilter",
    }
)
"""broker.conf keys an update applies while the broker runs (each is read on every request or round)."""

_KEY_LINE: Final = re.compile(r"^\s*([^#!\s=:][^=:\s]*)\s*[=:\s]")


def properties_text(table: Mapping[str, str]) -> str:
    """``key=value`` lines, as Java's ``MixAll.properties2String`` writes them."""
    return "".join(f"{key}={value}\n" for key, value in table.items())


def rewrite_properties(text: str, updates: Mapping[str, str]) -> str:
    """A broker.conf ``text`` with each of ``updates``' keys set: its line replaced where it has one,
    else appended; comments and the other lines kept."""
    left = dict(updates)
    lines = []
    for line in text.splitlines():
        match = _KEY_LINE.match(line + " ")
        if match and match.group(1) in left:
            key = match.group(1)
            lines.append(f"{key}={left.pop(key)}")
        else:
            lines.append(line)
    lines.extend(f"{key}={value}" for key, value in left.items())
    return "\n".join(lines) + "\n"


def _write_atomically(path: Path, text: str) -> None:
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(text, encoding="utf-8")
    with temp.open("rb") as handle:
        os.fsync(handle.fileno())
    temp.replace(path)


def handlers(context: BrokerContext) -> dict[int, RequestHandler]:
    version = {"counter": 0, "timestamp": int(time.time() * 1000)}

    async def get_config(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        body = properties_text(context.config.properties()).encode()
        return reply(request, ResponseCode.SUCCESS, ext_fields={"version": json.dumps(version)}, body=body)

    async def update_config(request: RemotingCommand, connection: Connection) -> RemotingCommand:
        try:
            updates = parse_properties(bytes(request.body).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            return reply(request, ResponseCode.SYSTEM_ERROR, f"the body is not properties text: {exc}")
        if not updates:
            return reply(request, ResponseCode.SYSTEM_ERROR, "no setting to update")
        config = context.config
        known = config.properties()
        for key, value in updates.items():
            if key not in known:
                return reply(request, ResponseCode.SYSTEM_ERROR, f"{key} is no broker setting")
            if key not in RUNTIME_KEYS:
                changeable = ", ".join(sorted(RUNTIME_KEYS))
                return reply(
                    request,
                    ResponseCode.SYSTEM_ERROR,
                    f"{key} cannot change while the broker runs: set it in broker.conf and restart"
                    f" (changeable now: {changeable})",
                )
            try:
                config = config.updated(key, value)
            except SettingError as exc:
                return reply(request, ResponseCode.SYSTEM_ERROR, str(exc))
        if context.config_file is not None:
            path = context.config_file
            try:
                text = await asyncio.to_thread(path.read_text, encoding="utf-8")
                await asyncio.to_thread(_write_atomically, path, rewrite_properties(text, updates))
            except OSError as exc:
                return reply(request, ResponseCode.SYSTEM_ERROR, f"cannot write {path}: {exc}; nothing changed")
        context.config = config
        version["counter"] += 1
        version["timestamp"] = int(time.time() * 1000)
        log.info("broker settings changed at run time: %s", updates)
        return reply(request, ResponseCode.SUCCESS)

    return {
        RequestCode.GET_BROKER_CONFIG: get_config,
        RequestCode.UPDATE_BROKER_CONFIG: update_config,
    }
