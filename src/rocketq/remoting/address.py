"""Addresses: this host's IPv4 address as peers would dial it; whether a listen address is private."""

from __future__ import annotations

import ipaddress
import socket


def local_ipv4() -> str:
    """An IPv4 address of this host that others can dial (RocketMQ's brokerIP1 default); 127.0.0.1
    when the host has no route out."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.255.255.255", 1))  # a UDP connect picks a source address; nothing is sent
            address = str(probe.getsockname()[0])
            if not address.startswith("0."):
                return address
    except OSError:
        pass
    return "127.0.0.1"


def listens_beyond_loopback(host: str) -> bool:
    """Whether a server bound to ``host`` can be reached from other machines: every address but the
    loopback ones (``127.0.0.0/8``, ``::1``, ``localhost``); all interfaces for ``0.0.0.0``, ``::``
    or ``""``."""
    if host.strip().lower() == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:  # a host name: assume it resolves to a reachable address
        return True
