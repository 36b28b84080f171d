from __future__ import annotations

import itertools
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.protocol import (
    DEFAULT_MAX_FRAME_SIZE,
    FrameDecoder,
    FrameTooLargeError,
    LanguageCode,
    ProtocolError,
    RemoteProtocolError,
    RemotingCommand,
    SerializeType,
    encode_frame,
    encode_frame_parts,
)
from rocketq.protocol.frame import LARGE_FRAME, RECEIVE_BUFFER, unfilled_bytearray

from .captures import CapturedFrame, captured_frames

CAPTURED = captured_frames()


def decode_all(chunks: list[bytes], **kwargs: int) -> list[RemotingCommand]:
    """The commands of ``chunks`` through both ways in: feed()/next_command() and decode() per read."""
    decoder, reader = FrameDecoder(**kwargs), FrameDecoder(**kwargs)
    commands: list[RemotingCommand] = []
    read: list[RemotingCommand] = []
    for chunk in chunks:
        decoder.feed(chunk)
        commands.extend(decoder)
        read.extend(reader.decode(chunk))
    assert decoder.buffered == 0 and reader.buffered == 0
    assert read == commands
    return commands


def split_randomly(data: bytes, rng: random.Random, max_chunk: int) -> list[bytes]:
    chunks, pos = [], 0
    while pos < len(data):
        size = rng.randint(1, max_chunk)
        chunks.append(data[pos : pos + size])
        pos += size
    return chunks


# --- captured frames ----------------------------------------------------------------


def test_capture_file_has_frames_from_every_client() -> None:
    assert len(CAPTURED) == 242
    languages = {frame.header.get("language") for frame in CAPTURED}
    assert languages == {"CPP", "JAVA"}


@pytest.mark.parametrize("frame", CAPTURED, ids=lambda f: f"{f.index}-{f.direction}-{f.name}")
def test_captured_frame_decodes_and_round_trips(frame: CapturedFrame) -> None:
    (whole,) = decode_all([frame.raw])
    byte_by_byte = decode_all([frame.raw[i : i + 1] for i in range(len(frame.raw))])
    assert byte_by_byte == [whole]

    expected = frame.header
    assert whole.code == expected["code"]
    assert whole.opaque == expected["opaque"]
    assert whole.flag == expected["flag"]
    assert whole.version == expected["version"]
    assert whole.language.name == expected["language"]
    assert whole.remark == expected.get("remark")
    assert set(whole.ext_fields) == set(expected.get("extFields", {}))
    assert all(isinstance(value, str) for value in whole.ext_fields.values())

    (again,) = decode_all([encode_frame(whole)])
    assert again == whole


def test_all_captured_frames_concatenated_and_chunked_randomly() -> None:
    stream = b"".join(frame.raw for frame in CAPTURED)
    expected = decode_all([frame.raw for frame in CAPTURED])
    assert len(expected) == len(CAPTURED)
    assert decode_all([stream]) == expected
    rng = random.Random(20240601)
    for max_chunk in (1, 3, 17, 256, 4096):
        assert decode_all(split_randomly(stream, rng, max_chunk)) == expected


def test_cpp_trailing_newline_counts_in_header_length() -> None:
    cpp = [frame for frame in CAPTURED if frame.header.get("language") == "CPP"]
    assert cpp
    for frame in cpp:
        header_length = struct.unpack(">I", frame.raw[4:8])[0]
        assert frame.raw[8 + header_length - 1 : 8 + header_length] == b"\n"
        (command,) = decode_all([frame.raw])
        assert command.language is LanguageCode.CPP


# --- incremental behaviour ------------------------------------------------------------


def test_partial_frame_waits_for_more() -> None:
    frame = encode_frame(RemotingCommand(code=11, opaque=1, body=b"payload"))
    decoder = FrameDecoder()
    decoder.feed(frame + frame[:10])
    assert decoder.next_command() is not None
    assert decoder.next_command() is None
    assert decoder.buffered == 10
    decoder.feed(frame[10:])
    assert decoder.next_command() == RemotingCommand(code=11, opaque=1, body=b"payload")
    assert decoder.next_command() is None


def test_many_small_frames_with_compaction() -> None:
    commands = [RemotingCommand(code=15, opaque=i, body=bytes(i % 300)) for i in range(2000)]
    stream = b"".join(encode_frame(c) for c in commands)
    assert decode_all(split_randomly(stream, random.Random(1), 70_000)) == commands


def test_large_body_byte_chunks() -> None:
    body = bytes(range(256)) * 4096  # 1 MiB
    command = RemotingCommand(code=11, opaque=3, body=body)
    frame = encode_frame(command)
    assert decode_all([frame[i : i + 1000] for i in range(0, len(frame), 1000)]) == [command]


def test_encode_frame_parts_does_not_copy_the_body() -> None:
    body = b"x" * 100_000
    command = RemotingCommand(code=11, body=body)
    first, second = encode_frame_parts(command)
    assert second is body
    assert bytes(first) + second == encode_frame(command)
    assert encode_frame_parts(RemotingCommand(code=11)) == [encode_frame(RemotingCommand(code=11))]


def test_memoryview_body_is_passed_through() -> None:
    backing = bytearray(b"..message-bytes..")
    view = memoryview(backing)[2:-2]
    parts = encode_frame_parts(RemotingCommand(code=11, opaque=5, body=view))
    assert parts[1] is view
    (decoded,) = decode_all([b"".join(parts)])
    assert decoded.body == b"message-bytes"
    assert decoded == RemotingCommand(code=11, opaque=5, body=view)


# --- limits and errors ----------------------------------------------------------------


def prefix(length: int, info: int) -> bytes:
    return struct.pack(">iI", length, info)


def test_default_limit_is_16_mib() -> None:
    assert FrameDecoder().max_frame_size == DEFAULT_MAX_FRAME_SIZE == 16 * 1024 * 1024


def test_oversize_frame_is_rejected_from_its_prefix() -> None:
    decoder = FrameDecoder()
    decoder.feed(struct.pack(">i", DEFAULT_MAX_FRAME_SIZE - 3))  # total = limit + 1
    with pytest.raises(FrameTooLargeError) as info:
        decoder.next_command()
    assert info.value.size == DEFAULT_MAX_FRAME_SIZE + 1
    assert info.value.limit == DEFAULT_MAX_FRAME_SIZE
    assert isinstance(info.value, RemoteProtocolError)


def test_frame_exactly_at_a_custom_limit_is_accepted() -> None:
    frame = encode_frame(RemotingCommand(code=1, body=b"abc"))
    assert decode_all([frame], max_frame_size=len(frame))
    with pytest.raises(FrameTooLargeError):
        decode_all([frame], max_frame_size=len(frame) - 1)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (struct.pack(">i", -1), "invalid frame length -1"),
        (struct.pack(">i", 3), "invalid frame length 3"),
        (prefix(20, (2 << 24) | 4) + b"{}{}" + bytes(12), "unknown serialize type 2"),
        (prefix(8, 5), "header length 5 exceeds"),
        (prefix(12, 8) + b"not json", "invalid JSON command header"),
    ],
)
def test_malformed_frames(data: bytes, message: str) -> None:
    decoder = FrameDecoder()
    decoder.feed(data)
    with pytest.raises(RemoteProtocolError, match=message):
        decoder.next_command()


def test_decoder_stays_failed() -> None:
    decoder = FrameDecoder()
    decoder.feed(struct.pack(">i", -1))
    with pytest.raises(RemoteProtocolError):
        decoder.next_command()
    assert decoder.failed
    with pytest.raises(RemoteProtocolError, match="failed earlier"):
        decoder.next_command()
    with pytest.raises(RemoteProtocolError, match="failed earlier"):
        decoder.feed(encode_frame(RemotingCommand(code=1)))


def test_decode_serves_the_frames_before_a_malformed_one_then_stays_failed() -> None:
    good = [encode_frame(RemotingCommand(code=code, opaque=code)) for code in (1, 2)]
    decoder = FrameDecoder()
    served = decoder.decode(good[0] + good[1] + struct.pack(">i", -1))
    assert [command.code for command in served] == [1, 2]
    assert decoder.failed and "invalid frame length -1" in str(decoder.error)
    with pytest.raises(RemoteProtocolError, match="failed earlier"):
        decoder.decode(good[0])
    alone = FrameDecoder()
    with pytest.raises(RemoteProtocolError, match="invalid frame length -1"):
        alone.decode(struct.pack(">i", -1))  # nothing to serve first: raised at once
    assert alone.failed


def test_decode_keeps_an_incomplete_tail_of_a_read() -> None:
    frame = encode_frame(RemotingCommand(code=7, body=b"x" * 100))
    decoder = FrameDecoder()
    assert [c.code for c in decoder.decode(frame + frame[:30])] == [7]
    assert decoder.buffered == 30
    assert [c.code for c in decoder.decode(frame[30:] + frame)] == [7, 7]
    assert decoder.buffered == 0


def test_constructor_rejects_silly_limit() -> None:
    with pytest.raises(ValueError):
        FrameDecoder(max_frame_size=4)


# --- property tests ---------------------------------------------------------------------

_INT16 = st.integers(-(2**15), 2**15 - 1)
_INT32 = st.integers(-(2**31), 2**31 - 1)


@st.composite
def commands(draw: st.DrawFn) -> RemotingCommand:
    serialize_type = draw(st.sampled_from(SerializeType))
    binary = serialize_type is SerializeType.ROCKETMQ
    return RemotingCommand(
        code=draw(_INT16 if binary else _INT32),
        language=draw(st.sampled_from(LanguageCode)),
        version=draw(_INT16 if binary else _INT32),
        opaque=draw(_INT32),
        flag=draw(_INT32),
        # The binary form cannot tell "" from null, so it only gets non-empty remarks.
        remark=draw(st.none() | st.text(min_size=1 if binary else 0, max_size=40)),
        ext_fields=draw(st.dictionaries(st.text(max_size=20), st.text(max_size=40), max_size=6)),
        body=draw(st.binary(max_size=300)),
        serialize_type=serialize_type,
    )


@given(commands())
def test_round_trip(command: RemotingCommand) -> None:
    assert decode_all([encode_frame(command)]) == [command]


@given(st.lists(commands(), max_size=8), st.data())
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_any_chunking_gives_the_same_commands(batch: list[RemotingCommand], data: st.DataObject) -> None:
    stream = b"".join(encode_frame(c) for c in batch)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=20)))
    bounds = [0, *cuts, len(stream)]
    chunks = [stream[a:b] for a, b in itertools.pairwise(bounds)]
    assert decode_all(chunks) == batch


@given(st.binary(max_size=2000), st.integers(8, 4096))
def test_garbage_only_raises_protocol_errors(garbage: bytes, limit: int) -> None:
    decoder = FrameDecoder(max_frame_size=limit)
    try:
        decoder.feed(garbage)
        list(decoder)
    except ProtocolError:
        assert decoder.failed
    reader = FrameDecoder(max_frame_size=limit)
    try:
        reader.decode(garbage)
    except ProtocolError:
        assert reader.failed


@given(st.binary(max_size=500))
def test_garbage_after_a_valid_prefix(garbage: bytes) -> None:
    # A plausible frame prefix followed by junk exercises the header decoders.
    for serialize_type in (0, 1):
        frame = prefix(4 + len(garbage), (serialize_type << 24) | len(garbage)) + garbage
        decoder = FrameDecoder()
        decoder.feed(frame)
        try:
            command = decoder.next_command()
        except ProtocolError:
            continue
        assert command is not None


@given(
    st.lists(st.sampled_from([0, 50, 40_000, 70_000, 300_000]), min_size=1, max_size=5),
    st.sampled_from([None, RECEIVE_BUFFER]),
    st.data(),
)
@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=80)
def test_large_frames_over_many_reads_give_the_same_commands(
    sizes: list[int], body_chunk: int | None, data: st.DataObject
) -> None:
    """Large frames' bodies are received into buffers of their own; any cut, reads straight into the
    decoder's buffers or copied in (``decode``, ``feed``) give the same commands and the same ``buffered``
    count, whatever the size of those buffers."""
    batch = [RemotingCommand(code=11, opaque=i, body=bytes([i]) * size) for i, size in enumerate(sizes)]
    stream = b"".join(encode_frame(c) for c in batch)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    bounds = [0, *cuts, len(stream)]
    decoder = FrameDecoder(body_chunk=body_chunk)
    decoded: list[RemotingCommand] = []
    for a, b in itertools.pairwise(bounds):
        chunk = stream[a:b]
        way = data.draw(st.sampled_from(["received", "received", "bytes", "bytearray", "feed"]))
        if way == "feed":
            decoder.feed(chunk)
            decoded.extend(decoder)
        elif way == "received":  # as a BufferedProtocol transport: into get_buffer, as much as fits
            while chunk:
                room = decoder.get_buffer()
                assert len(room) > 0
                size = min(len(room), len(chunk))
                room[:size] = chunk[:size]
                chunk = chunk[size:]
                decoded.extend(decoder.buffer_updated(size))
        else:
            decoded.extend(decoder.decode(chunk if way == "bytes" else bytearray(chunk)))
        assert decoder.buffered == b - sum(len(encode_frame(c)) for c in decoded)
    assert decoded == batch
    for command in decoded:
        body = command.body
        assert type(body) is bytes or (isinstance(body, memoryview) and body.readonly)
        if len(body) > RECEIVE_BUFFER and body_chunk is None:  # always in a buffer of its own, kept
            assert isinstance(body, memoryview) and type(body.obj) is bytearray


def test_a_large_body_is_the_buffer_it_was_received_into() -> None:
    """No copy of a large answer: the body of a frame read through ``get_buffer`` is a read-only view of
    the very buffer the reads after its header went into."""
    body = bytes(range(256)) * 1024  # 256 KiB
    stream = encode_frame(RemotingCommand(code=11, opaque=5, body=body))
    decoder = FrameDecoder()
    targets: list[object] = []
    decoded: list[RemotingCommand] = []
    while stream:
        room = decoder.get_buffer()
        targets.append(room.obj)
        size = min(len(room), len(stream))
        room[:size] = stream[:size]
        stream = stream[size:]
        decoded.extend(decoder.buffer_updated(size))
    assert len(targets) == 2  # the first read up to the receive buffer's end, the second all the rest
    [command] = decoded
    assert isinstance(command.body, memoryview) and command.body.readonly
    assert command.body.obj is targets[-1]
    assert command.body == body


@pytest.mark.parametrize("body_chunk", [None, RECEIVE_BUFFER])
def test_a_large_body_holds_only_received_bytes_in_reused_memory(body_chunk: int | None) -> None:
    """A large body's buffers are not zeroed first (``unfilled_bytearray``): memory freed just before,
    full of other bytes, and reused for them shows none of those bytes in the body, whatever the cuts."""
    size = 3 * RECEIVE_BUFFER + 17
    body = bytes(size)  # zeros: any stale byte of the earlier buffers would show
    stream = encode_frame(RemotingCommand(code=11, opaque=5, body=body))
    for cut in (1, 4096, RECEIVE_BUFFER - 3, len(stream)):
        stale = [bytearray(b"\xa5") * n for n in (size, RECEIVE_BUFFER, size)]
        del stale  # (freed: the allocator hands this memory out next)
        decoder = FrameDecoder(body_chunk=body_chunk)
        decoded: list[RemotingCommand] = []
        rest = stream
        while rest:
            room = decoder.get_buffer()
            take = min(len(room), cut, len(rest))
            room[:take] = rest[:take]
            rest = rest[take:]
            decoded.extend(decoder.buffer_updated(take))
        assert [c.body for c in decoded] == [body]


def test_unfilled_bytearray_is_a_bytearray_of_the_size_asked() -> None:
    for size in (0, 1, LARGE_FRAME, 4 << 20):
        made = unfilled_bytearray(size)
        assert type(made) is bytearray and len(made) == size
        made += b"\x07"  # writable and resizable like any bytearray
        assert len(made) == size + 1 and made[size] == 7


def test_a_server_receives_a_large_body_in_parts() -> None:
    """With ``body_chunk`` a body's buffers are allocated as its bytes come, never more than a chunk ahead."""
    body = b"z" * (5 * RECEIVE_BUFFER)
    stream = encode_frame(RemotingCommand(code=11, opaque=5, body=body))
    decoder = FrameDecoder(body_chunk=RECEIVE_BUFFER)
    decoded: list[RemotingCommand] = []
    while stream:
        room = decoder.get_buffer()
        assert len(room) <= RECEIVE_BUFFER
        size = min(len(room), len(stream))
        room[:size] = stream[:size]
        stream = stream[size:]
        decoded.extend(decoder.buffer_updated(size))
    assert [c.body for c in decoded] == [body]
    assert type(decoded[0].body) is bytes


def test_body_chunk_below_the_receive_buffer_is_refused() -> None:
    with pytest.raises(ValueError, match="body_chunk"):
        FrameDecoder(body_chunk=RECEIVE_BUFFER - 1)


def test_the_receive_buffer_bounds_a_read_of_small_frames() -> None:
    """A read of small frames takes at most ``receive_buffer`` bytes; frames split across reads decode whole."""
    frames = [encode_frame(RemotingCommand(code=11, opaque=n, body=bytes([n % 256]) * 1000)) for n in range(300)]
    stream = b"".join(frames)
    for size in (LARGE_FRAME, RECEIVE_BUFFER, 4 * RECEIVE_BUFFER):
        decoder = FrameDecoder(receive_buffer=size)
        rest, decoded = stream, []
        while rest:
            room = decoder.get_buffer()
            assert 0 < len(room) <= size
            taken = min(len(room), len(rest))
            room[:taken] = rest[:taken]
            rest = rest[taken:]
            decoded.extend(decoder.buffer_updated(taken))
        assert [c.opaque for c in decoded] == list(range(300))
        assert all(c.body == bytes([c.opaque % 256]) * 1000 for c in decoded)


def test_a_receive_buffer_below_a_large_frame_or_above_body_chunk_is_refused() -> None:
    with pytest.raises(ValueError, match="receive_buffer"):
        FrameDecoder(receive_buffer=LARGE_FRAME - 1)
    with pytest.raises(ValueError, match="body_chunk"):
        FrameDecoder(receive_buffer=4 * RECEIVE_BUFFER, body_chunk=RECEIVE_BUFFER)
