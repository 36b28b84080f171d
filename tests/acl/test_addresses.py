"""Remote-address patterns of plain_acl.yml, in the forms RocketMQ 4.x accepts."""

from __future__ import annotations

import pytest

from rocketq.acl import AclConfigError, parse_address_pattern, parse_host

CASES = [
    # pattern, addresses it lets in, addresses it keeps out
    ("", [], ["127.0.0.1", "::1"]),
    ("*", ["10.1.2.3", "::1"], []),
    ("*.*.*.*", ["10.1.2.3"], []),
    ("*:*:*:*:*:*:*:*", ["fe80::1"], []),
    ("127.0.0.1", ["127.0.0.1", "::ffff:127.0.0.1"], ["127.0.0.2", "::1"]),
    ("::1", ["0:0:0:0:0:0:0:1", "0000:0000:0000:0000:0000:0000:0000:0001"], ["::2", "127.0.0.1"]),
    ("127.0.0.1,127.0.0.2, 127.0.0.3", ["127.0.0.1", "127.0.0.3"], ["127.0.0.4"]),
    ("127.0.0.{1,2,3}", ["127.0.0.1", "127.0.0.3"], ["127.0.0.0", "127.0.0.4"]),
    ("1050::5:600:300c:{1,2}", ["1050:0:0:0:5:600:300c:2"], ["1050:0:0:0:5:600:300c:3"]),
    ("127.0.0.1-200", ["127.0.0.1", "127.0.0.200"], ["127.0.0.0", "127.0.0.201", "127.0.1.1"]),
    ("127.0.0.*", ["127.0.0.0", "127.0.0.255"], ["127.0.1.0"]),
    ("127.0.1-20.*", ["127.0.1.0", "127.0.20.255"], ["127.0.0.255", "127.0.21.0"]),
    ("192.100-150.*.*", ["192.130.0.2"], ["192.151.0.1", "193.130.0.2"]),
    ("127.*.*.*", ["127.255.1.1"], ["128.0.0.1"]),
    ("192.168.*", ["192.168.7.9"], ["192.169.0.1"]),
    ("1050::0005:0600:300c:1-200", ["1050::5:600:300c:1", "1050::5:600:300c:200"], ["1050::5:600:300c:201"]),
    ("1050::0005:0600:300c:*", ["1050::5:600:300c:ffff"], ["1050::5:600:300d:1"]),
    ("1050:0005:0600:300c:3261:*", ["1050:5:600:300c:3261:1:2:3"], ["1050:5:600:300c:3262::"]),
    ("1050::5:600:300c:1-20:*", ["1050::5:600:300c:20:ffff"], ["1050::5:600:300c:21:0"]),
]


@pytest.mark.parametrize(("pattern", "allowed", "refused"), CASES)
def test_pattern(pattern: str, allowed: list[str], refused: list[str]) -> None:
    parsed = parse_address_pattern(pattern)
    for address in allowed:
        assert parsed.matches(parse_host(address)), address
    for address in refused:
        assert not parsed.matches(parse_host(address)), address


def test_a_peer_that_is_not_an_ip_address_matches_only_the_any_pattern() -> None:
    assert parse_host("some-host") is None
    assert parse_address_pattern("*").matches(None)
    assert not parse_address_pattern("127.0.0.1").matches(None)


@pytest.mark.parametrize(
    "pattern",
    [
        "256.0.0.1",
        "1.2.3",
        "::1ggg",
        "127.0.0.200-1",  # starts after it ends
        "127.0.0.1-256",
        "192.168.*.5",  # RocketMQ reads this as 192.168.*.*: refused here
        "*.1.1.1",
        "-1.2.3.4",
        "1.2.3.-5",
        "{192.168.1.1}",
        "192.168.{1,2}",
        "127.0.0.1,2,3}",
        "127.0.0.{1,,2}",
        "1::2::3:*",
    ],
)
def test_bad_patterns_are_errors(pattern: str) -> None:
    with pytest.raises(AclConfigError, match="address pattern"):
        parse_address_pattern(pattern)
