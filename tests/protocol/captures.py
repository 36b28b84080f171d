"""Frames captured from the real C++ (rocketmq 0.4.4) and ali-ons clients.

``data/frames-raw-cpp-and-alions.jsonl`` is a copy of
``docs/protocol/captures/frames-raw-cpp-and-alions.jsonl``: one JSON object per line;
frame events carry ``rawHex`` (the complete frame), ``role`` (ns/broker), ``dir``
(in = from the client, out = from the probe server), ``code`` and the decoded ``hdr``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

CAPTURE_FILE = Path(__file__).parent / "data" / "frames-raw-cpp-and-alions.jsonl"


@dataclass(frozen=True)
class CapturedFrame:
    index: int
    role: str
    direction: str
    name: str
    raw: bytes
    header: dict[str, Any]


@cache
def captured_frames() -> tuple[CapturedFrame, ...]:
    frames = []
    for index, line in enumerate(CAPTURE_FILE.read_text().splitlines()):
        row = json.loads(line)
        if "rawHex" not in row:
            continue  # connect / close events
        frames.append(
            CapturedFrame(
                index=index,
                role=row["role"],
                direction=row["dir"],
                name=row["name"],
                raw=bytes.fromhex(row["rawHex"]),
                header=row["hdr"],
            )
        )
    return tuple(frames)


def frames_named(name: str) -> list[CapturedFrame]:
    return [frame for frame in captured_frames() if frame.name == name]
