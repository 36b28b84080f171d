"""The HA wire format and its rules, without sockets."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.replication import frames
from rocketq.testing import FakeClock

FILE = 1024


def test_a_frame_is_offset_size_and_bytes_big_endian() -> None:
    assert frames.encode_frame(0x0102, b"xy") == bytes.fromhex("0000000000000102 00000002") + b"xy"
    assert frames.encode_frame(7) == bytes.fromhex("0000000000000007 00000000")  # a heartbeat
    assert frames.encode_report(1 << 40) == (1 << 40).to_bytes(8, "big")


@given(st.lists(st.binary(max_size=50), max_size=20), st.integers(1, 64))
def test_frames_come_out_whole_however_the_bytes_are_cut(bodies: list[bytes], piece: int) -> None:
    offset, stream, expected = 0, b"", []
    for body in bodies:
        stream += frames.encode_frame(offset, body)
        expected.append(frames.Frame(offset, body))
        offset += len(body)
    reader = frames.FrameReader()
    got = [frame for at in range(0, len(stream), piece) for frame in reader.feed(stream[at : at + piece])]
    assert got == expected


def test_reports_give_the_newest_complete_offset() -> None:
    reader = frames.ReportReader()
    data = frames.encode_report(5) + frames.encode_report(9)
    assert reader.feed(data[:3]) is None
    assert reader.feed(data[3:12]) == 5
    assert reader.feed(data[12:]) == 9


def test_garbage_is_refused() -> None:
    with pytest.raises(frames.ProtocolError):
        frames.FrameReader(max_body=100).feed(frames.HEADER.pack(0, 101))
    with pytest.raises(frames.ProtocolError):
        frames.ReportReader().feed((-1).to_bytes(8, "big", signed=True))


def test_a_new_slave_starts_at_the_masters_last_file_and_chunks_stay_in_one_file() -> None:
    assert frames.transfer_start(0, 3 * FILE + 100, FILE) == 3 * FILE  # nothing: the last file's start
    assert frames.transfer_start(0, 0, FILE) == 0
    assert frames.transfer_start(1500, 3 * FILE + 100, FILE) == 1500  # else where it is
    assert frames.chunk_size(1000, 5000, FILE, 512) == 24  # up to the file's end
    assert frames.chunk_size(1024, 5000, FILE, 512) == 512
    assert frames.chunk_size(4990, 5000, FILE, 512) == 10  # up to what is written
    assert frames.chunk_size(5000, 5000, FILE, 512) == 0


def test_silence_is_measured_by_the_injected_clock() -> None:
    clock = FakeClock(start=100.0)
    silence = frames.Silence(clock.time)
    clock.advance(19)
    assert not silence.over(20)
    clock.advance(1)
    assert silence.over(20) and silence.lasted() == 20
    silence.heard()
    assert not silence.over(20)
