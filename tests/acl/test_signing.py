"""Request signatures: vectors computed here with the standard library (hmac, hashlib, base64) for a
Java-shaped request, and real frames of the official C++ client, which signs even without credentials
(an empty AccessKey, an HMAC keyed with the empty string)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.acl import Credentials, SigningKey, sign, signature, verify
from rocketq.acl.signing import KEY_STATE, HashlibKey, NativeKey, signed_names
from rocketq.native.modules import MANIFEST_NAME, NATIVE_DIR
from rocketq.protocol import FrameDecoder, RemotingCommand, RequestCode, encode_frame, make_request

# Two requests of the C++ client (rocketmq 0.4.4, no credentials) as they came off the wire.
CPP_SEND_MESSAGE = bytes.fromhex(
    "00000222000002147b22636f6465223a31302c226578744669656c6473223a7b224163636573734b6579223a22222c224f6e"
    "734368616e6e656c223a22414c4959554e222c225369676e6174757265223a22496469632b344569594e6e74355275517a65"
    "484534704755382f413d222c226261746368223a2230222c22626f726e54696d657374616d70223a22313739353239373139"
    "35303534222c2264656661756c74546f706963223a22544257313032222c2264656661756c74546f70696351756575654e75"
    "6d73223a342c22666c6167223a302c2270726f647563657247726f7570223a2250475f54455354222c2270726f7065727469"
    "6573223a224b4559535c75303030316b65792d31206b65792d325c7530303032544147535c7530303031546167415c753030"
    "3032554e49515f4b45595c753030303130313030303037463030303036383044303030304145393630323731303130305c75"
    "30303032574149545c7530303031747275655c75303030326d7970726f705c753030303176315c7530303032222c22717565"
    "75654964223a302c227265636f6e73756d6554696d6573223a2230222c22737973466c6167223a302c22746f706963223a22"
    "546f70696354657374222c22756e69744d6f6465223a2230227d2c22666c6167223a302c226c616e6775616765223a224350"
    "50222c226f7061717565223a312c2272656d61726b223a22222c2276657273696f6e223a36337d0a68656c6c6f2d73796e63"
)
CPP_PULL_MESSAGE = bytes.fromhex(
    "0000017b000001777b22636f6465223a31312c226578744669656c6473223a7b224163636573734b6579223a22222c224f6e"
    "734368616e6e656c223a22414c4959554e222c225369676e6174757265223a225467576c4474626f52617477307a4b75635a"
    "4b617439534c4965553d222c22636f6d6d69744f6666736574223a2230222c22636f6e73756d657247726f7570223a224347"
    "5f54455354222c226d61784d73674e756d73223a33322c2271756575654964223a302c2271756575654f6666736574223a22"
    "30222c2273756256657273696f6e223a2231373935323937313937353834222c22737562736372697074696f6e223a222a22"
    "2c2273757370656e6454696d656f75744d696c6c6973223a223135303030222c22737973466c6167223a362c22746f706963"
    "223a222552455452592543475f54455354227d2c22666c6167223a302c226c616e6775616765223a22435050222c226f7061"
    "717565223a392c2272656d61726b223a22222c2276657273696f6e223a36337d0a"
)


def reference_signature(secret_key: str, fields: dict[str, str], body: bytes) -> str:
    """RocketMQ's rule, written out: values sorted by field name, Signature left out, then the body."""
    text = "".join(value for name, value in sorted(fields.items()) if name != "Signature")
    digest = hmac.new(secret_key.encode("utf-8"), text.encode("utf-8") + body, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def java_send_v2() -> RemotingCommand:
    """SEND_MESSAGE_V2 as the Java client 4.9 fills it (SendMessageRequestHeaderV2's one-letter fields)."""
    fields = {
        "a": "please_rename_unique_group_name",
        "b": "TopicTest",
        "c": "TBW102",
        "d": "4",
        "e": "2",
        "f": "0",
        "g": "1700000000123",
        "h": "0",
        "i": "UNIQ_KEY\x017F00000100002A9F0000000000000000\x02WAIT\x01true\x02TAGS\x01TagA\x02",
        "j": "0",
        "k": "false",
        "m": "false",
    }
    return make_request(RequestCode.SEND_MESSAGE_V2, opaque=7, ext_fields=fields, body="Hello RocketMQ ü".encode())


def decode(frame: bytes) -> RemotingCommand:
    (command,) = FrameDecoder().decode(frame)
    return command


def test_java_shaped_send_is_signed_as_rocketmq_signs() -> None:
    request = java_send_v2()
    credentials = Credentials("RocketMQ", "12345678")
    sign(request, credentials)
    fields = request.ext_fields
    assert fields["AccessKey"] == "RocketMQ"
    unsigned = {name: value for name, value in fields.items() if name != "Signature"}
    assert fields["Signature"] == reference_signature("12345678", unsigned, bytes(request.body))
    assert fields["Signature"] == "jiw//Wt3QqGOpOftzElpVXa2bxY="  # fixed: catches both sides drifting together
    # what the broker decodes from the wire verifies; another secret or a changed byte does not
    received = decode(encode_frame(request))
    assert verify(SigningKey("12345678"), received.ext_fields, received.body)
    assert not verify(SigningKey("12345679"), received.ext_fields, received.body)
    assert not verify(SigningKey("12345678"), received.ext_fields, bytes(received.body) + b"!")
    tampered = dict(received.ext_fields, b="OtherTopic")
    assert not verify(SigningKey("12345678"), tampered, received.body)


def test_signing_twice_gives_the_same_signature_and_leaves_a_shared_dict_alone() -> None:
    shared = {"topic": "T", "consumerGroup": "G"}
    request = RemotingCommand(code=RequestCode.PULL_MESSAGE, ext_fields=shared)
    credentials = Credentials("account1", "secret-1")
    sign(request, credentials)
    first = request.ext_fields["Signature"]
    sign(request, credentials)  # a retried request
    assert request.ext_fields["Signature"] == first
    assert shared == {"topic": "T", "consumerGroup": "G"}
    assert "secret-1" not in repr(credentials)


def test_a_large_body_is_signed_like_a_small_one() -> None:
    body = bytes(range(256)) * 1024  # 256 KiB
    fields = {"AccessKey": "account1", "topic": "T"}
    assert signature("secret-1", fields, memoryview(body)) == reference_signature("secret-1", fields, body)


@pytest.mark.parametrize("frame", [CPP_SEND_MESSAGE, CPP_PULL_MESSAGE], ids=["send", "pull"])
def test_real_cpp_frames_verify(frame: bytes) -> None:
    request = decode(frame)
    fields = request.ext_fields
    assert fields["AccessKey"] == "" and fields["OnsChannel"] == "ALIYUN"
    # the C++ client sends some values as JSON numbers and signs their text: the decoder's text matches
    assert fields["Signature"] == reference_signature("", fields, bytes(request.body))
    assert verify(SigningKey(""), fields, request.body)
    assert not verify(SigningKey("12345678"), fields, request.body)


def test_unique_key_query_flag_is_accepted_signed_or_not() -> None:
    fields = {"AccessKey": "account1", "topic": "T", "key": "k", "maxNum": "32"}
    old_java = dict(fields, Signature=reference_signature("secret-1", fields, b""), _UNIQUE_KEY_QUERY="true")
    new_java_fields = dict(fields, _UNIQUE_KEY_QUERY="true")
    new_java = dict(new_java_fields, Signature=reference_signature("secret-1", new_java_fields, b""))
    assert verify(SigningKey("secret-1"), old_java, b"")  # signed before the flag was added (Java < 4.9.4)
    assert verify(SigningKey("secret-1"), new_java, b"")  # the flag signed like any field (Java >= 4.9.4)
    # rocketq's own client signs as the older Java clients do, which every broker version accepts
    request = RemotingCommand(code=RequestCode.QUERY_MESSAGE, ext_fields=dict(fields, _UNIQUE_KEY_QUERY="true"))
    sign(request, Credentials("account1", "secret-1"))
    assert request.ext_fields["Signature"] == old_java["Signature"]


def test_no_signature_never_verifies() -> None:
    assert not verify(SigningKey(""), {"AccessKey": "", "topic": "T"}, b"")


@pytest.mark.parametrize(
    "claimed",
    [
        "not base64!",  # outside the alphabet
        "ü" * 28,  # not even ASCII
        "{good}\n",  # the right signature with a line break after it
        " {good}",  # or a space before it
        "{good}AAAA",  # or more data after its padding
        "{short}",  # a prefix of it: not 20 bytes
        "",
    ],
)
def test_only_the_signature_itself_verifies(claimed: str) -> None:
    fields = {"AccessKey": "account1", "topic": "T"}
    good = reference_signature("secret-1", fields, b"body")
    signed = dict(fields, Signature=good)
    assert verify(SigningKey("secret-1"), signed, b"body")
    tampered = dict(fields, Signature=claimed.format(good=good, short=good[:8]))
    assert not verify(SigningKey("secret-1"), tampered, b"body")


@pytest.mark.parametrize("secret", ["", "12345678", "ü-secret", "k" * 64, "k" * 65, "long" * 40])
def test_prepared_keys_give_the_standard_hmac(secret: str) -> None:
    fields = {"AccessKey": "account1", "topic": "T", "queueId": "3"}
    body = b"\x00\x01 body \xff" * 10
    expected = reference_signature(secret, fields, body)
    key = SigningKey(secret)
    assert key.signature(fields, body) == expected
    assert key.signature(fields, memoryview(body)) == expected  # again: the prepared states are not used up


field_maps = st.dictionaries(
    st.text(alphabet=st.characters(codec="ascii", exclude_characters="\x00"), max_size=12),
    st.text(max_size=20),
    max_size=16,
)


@settings(max_examples=200, deadline=None)
@given(fields=field_maps, later_values=st.lists(st.text(max_size=20), min_size=16, max_size=16), body=st.binary())
def test_signatures_equal_the_reference_whatever_the_names(
    fields: dict[str, str], later_values: list[str], body: bytes
) -> None:
    # the field order is worked out once per sequence of names: a second request with the same names and
    # other values, and one with the same names in another order, are signed by the rule all the same
    key = SigningKey("secret-1")
    assert key.signature(fields, body) == reference_signature("secret-1", fields, body)
    again = dict(zip(fields, later_values, strict=False))
    assert key.signature(again, body) == reference_signature("secret-1", again, body)
    reordered = dict(reversed(list(again.items())))
    assert key.signature(reordered, body) == reference_signature("secret-1", reordered, body)
    with_signature = dict(fields, Signature=key.signature(fields, body))
    assert verify(key, with_signature, body)


def test_requests_of_other_names_but_as_many_fields_are_signed_by_their_own_names() -> None:
    # the names last signed with a given number of fields are kept: a request with as many fields but
    # other names (one name differs; all differ; a Signature in place of a field) must not use them
    key = SigningKey("secret-2")
    first = {"b": "topic", "a": "group", "AccessKey": "ak"}
    one_differs = {"b": "topic", "c": "group", "AccessKey": "ak"}
    all_differ = {"x": "1", "y": "2", "z": "3"}
    signed = {"b": "topic", "a": "group", "Signature": "s"}
    for fields in (first, one_differs, first, all_differ, signed, first, signed):
        assert key.signature(fields, b"body") == reference_signature("secret-2", fields, b"body")


# The C key (rocketq/acl/_hmac_sha1.c, loaded with a compiled build) against the hashlib one, on the same
# inputs: field maps with any text (non-ASCII, empty values), bodies empty to large, many secrets.
needs_c_key = pytest.mark.skipif(NativeKey is None, reason="no compiled build with the C HMAC in this process")
any_text_fields = st.dictionaries(st.text(max_size=12), st.text(max_size=40), max_size=20)
secrets = st.lists(st.binary(max_size=130), min_size=1, max_size=6)  # beyond 64 bytes: the key is hashed first


def test_a_compiled_build_signs_in_c_and_a_plain_run_with_hashlib() -> None:
    mode = os.environ.get("ROCKETQ_NATIVE")
    if mode == "off":
        assert NativeKey is None
        assert KEY_STATE is HashlibKey
    elif (
        mode == "required"
        and "rocketq.acl._hmac_sha1" in json.loads((NATIVE_DIR / MANIFEST_NAME).read_text())["c_sources"]
    ):
        assert NativeKey is not None
        assert KEY_STATE is NativeKey


@needs_c_key
@settings(max_examples=300, deadline=None)
@given(keys=secrets, fields=any_text_fields, body=st.binary(max_size=3000))
def test_the_c_key_signs_as_the_hashlib_key(keys: list[bytes], fields: dict[str, str], body: bytes) -> None:
    assert NativeKey is not None
    names = signed_names(fields)
    for secret in keys:
        native, plain = NativeKey(secret), HashlibKey(secret)
        expected = plain.digest(fields, names, body)
        assert native.digest(fields, names, body) == expected
        assert native.digest(fields, names, memoryview(body)) == expected  # again: its states are not used up
        assert native.signature(fields, names, body) == plain.signature(fields, names, body)
        assert base64.b64decode(native.signature(fields, names, body)) == expected


@needs_c_key
@pytest.mark.parametrize("size", [0, 55, 56, 64, 65535, 65536, 300_001])  # padding edges; hashed without the GIL
def test_the_c_key_signs_bodies_of_any_size_as_the_hashlib_key(size: int) -> None:
    assert NativeKey is not None
    body = os.urandom(size)
    fields = {"AccessKey": "ak-ü", "b": "Topic", "i": "UNIQ_KEY\x01ab\x02", "empty": ""}
    names = signed_names(fields)
    for secret in (b"", b"12345678", "ü".encode() * 40):
        assert NativeKey(secret).digest(fields, names, body) == HashlibKey(secret).digest(fields, names, body)
        assert NativeKey(secret).signature(fields, names, body) == reference_signature(secret.decode(), fields, body)


@needs_c_key
def test_the_c_key_refuses_what_the_hashlib_key_refuses() -> None:
    assert NativeKey is not None
    for key in (NativeKey(b"k"), HashlibKey(b"k")):
        with pytest.raises(KeyError):
            key.digest({"a": "1"}, ("a", "b"), b"")
        with pytest.raises(TypeError):
            key.digest({"a": 1}, ("a",), b"")  # type: ignore[dict-item]
        with pytest.raises(UnicodeEncodeError):
            key.digest({"a": "\udc80"}, ("a",), b"")  # a lone surrogate has no UTF-8
        with pytest.raises(TypeError):
            key.digest({"a": "1"}, ("a",), "text body")  # type: ignore[arg-type]


# A request's whole signature and its whole check in one C call (``Key.sign``, ``Key.verify``: the order
# of the names found in C, the claimed signature decoded in C) against the hashlib key's Python, which
# finds the order with ``signed_names`` and decodes with ``binascii``.
signing_names = st.one_of(st.text(max_size=12), st.sampled_from(["Signature", "_UNIQUE_KEY_QUERY", "AccessKey"]))
request_fields = st.dictionaries(signing_names, st.text(max_size=40), max_size=40)  # beyond 32: not on the stack


def claims(good: str, flag_signed: str) -> st.SearchStrategy[str]:
    """What a Signature may claim: the right one (either way of signing _UNIQUE_KEY_QUERY), a character of
    it changed (the last data character's unused bits included), more or less of it, or any text."""
    changed = st.tuples(st.integers(0, 27), st.characters(codec="ascii")).map(
        lambda change: good[: change[0]] + change[1] + good[change[0] + 1 :]
    )
    return st.one_of(
        st.just(good),
        st.just(flag_signed),
        changed,
        st.sampled_from([good + "=", good[:-1], good + "\n", " " + good, good.replace("=", "A")]),
        st.text(max_size=30),
        st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", min_size=27, max_size=29),
    )


@needs_c_key
@settings(max_examples=400, deadline=None)
@given(data=st.data(), keys=secrets, fields=request_fields, body=st.binary(max_size=3000))
def test_the_c_key_signs_and_checks_whole_requests_as_the_hashlib_key(
    data: st.DataObject, keys: list[bytes], fields: dict[str, str], body: bytes
) -> None:
    assert NativeKey is not None
    for secret in keys:
        native, plain = NativeKey(secret), HashlibKey(secret)
        expected = plain.sign(fields, body)
        assert native.sign(fields, body) == expected
        assert native.sign(types.MappingProxyType(fields), memoryview(body)) == expected  # any mapping
        assert native.verify(fields, body) == plain.verify(fields, body)  # fields' own Signature, if any
        unsigned = {name: value for name, value in fields.items() if name != "Signature"}
        flag_signed = plain.signature(unsigned, signed_names(unsigned, frozenset()), body)
        claimed = data.draw(claims(plain.sign(unsigned, body), flag_signed))
        request = dict(fields, Signature=claimed)
        assert native.verify(request, body) == plain.verify(request, body)
        assert native.verify(types.MappingProxyType(request), body) == plain.verify(request, body)


@needs_c_key
@pytest.mark.parametrize("size", [0, 450, 511, 512, 513, 2000, 65536])  # around the C key's 512-byte gather
def test_the_c_key_signs_long_values_and_bodies_as_the_hashlib_key(size: int) -> None:
    assert NativeKey is not None
    fields = {"AccessKey": "ak", "a": "x" * size, "b": "ü" * (size // 2), "c": "", "d": "y" * (size // 3)}
    body = os.urandom(size)
    for secret in (b"", b"12345678"):
        native, plain = NativeKey(secret), HashlibKey(secret)
        expected = reference_signature(secret.decode(), fields, body)
        assert native.sign(fields, body) == plain.sign(fields, body) == expected
        signed = dict(fields, Signature=plain.sign(fields, body))
        assert native.verify(signed, body) and plain.verify(signed, body)


@needs_c_key
def test_the_c_key_refuses_whole_requests_as_the_hashlib_key() -> None:
    assert NativeKey is not None
    good = reference_signature("k", {"a": "1"}, b"")
    for key in (NativeKey(b"k"), HashlibKey(b"k")):
        for call in (key.sign, key.verify):
            with pytest.raises(TypeError):
                call({"a": 1, "Signature": good}, b"")  # type: ignore[dict-item]
            with pytest.raises(UnicodeEncodeError):
                call({"a": "\udc80", "Signature": good}, b"")
            with pytest.raises(TypeError):
                call({"a": "1", "Signature": good}, "text body")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            key.verify({"a": "1", "Signature": b"bytes"}, b"")  # type: ignore[dict-item]
        assert not key.verify({"a": 1, "Signature": "not base64"}, b"")  # type: ignore[dict-item]  # nothing hashed
