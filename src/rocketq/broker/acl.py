"""The broker's access control: the rules of its ``plain_acl.yml`` (``rocketq.acl``), re-read when the
file changes, and the check the remoting server runs before every request (``BrokerAcl.check``).

A request the rules refuse is answered NO_PERMISSION (16) with a remark saying what is missing, and
never reaches its handler. (RocketMQ 4.9 answers SYSTEM_ERROR with the same kind of text; either is an
error to its clients.) The file is looked at every ``aclFileCheckIntervalMs``; when its modification
time, size or inode changed, it is read again. A file that does not parse, or that vanished, keeps
the rules in force, and the broker logs why at WARNING; at start such a file stops the broker.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from rocketq.acl import AclConfigError, AclRules, PeerAccess, parse_acl_yaml, parse_host
from rocketq.protocol import RemotingCommand, ResponseCode, make_response
from rocketq.remoting import Connection

log = logging.getLogger(__name__)

_PEER = "acl.peer"  # Connection.attributes key: the peer's PeerAccess (its address parsed once, its account)

_Stamp = tuple[int, int, int]


class BrokerAcl:
    """Holds the rules in force. ``check`` is the remoting server's guard; ``reload_if_changed`` is
    what the broker's poll calls (tests call it too, instead of waiting for the poll)."""

    def __init__(self, path: Path, rules: AclRules, stamp: _Stamp | None = None) -> None:
        self.path = path
        self.rules = rules
        self._stamp = stamp
        self.refused = 0  # requests refused since start

    @classmethod
    def load(cls, path: Path) -> BrokerAcl:
        """Read ``path`` once.

        Raises:
            AclConfigError: It cannot be read or does not parse.
        """
        stamp = _stamp(path)
        if stamp is None:
            raise AclConfigError(f"aclEnable=true but the ACL file {path} does not exist (set aclFile)")
        rules = _read(path)
        log.info("ACL: %d account(s), %d global white address(es) from %s", *_counts(rules), path)
        return cls(path, rules, stamp)

    def reload_if_changed(self) -> bool:
        """Read the file again if it changed since it was last read; True when new rules took effect.
        A file that vanished or does not parse keeps the rules in force (logged once per change)."""
        stamp = _stamp(self.path)
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        if stamp is None:
            log.warning("ACL file %s is gone: keeping the rules read before", self.path)
            return False
        try:
            rules = _read(self.path)
        except AclConfigError as exc:
            log.warning("ACL file %s changed but cannot be used, keeping the rules read before: %s", self.path, exc)
            return False
        self.rules = rules
        log.warning("ACL file %s re-read: %d account(s), %d global white address(es)", self.path, *_counts(rules))
        return True

    def check(self, request: RemotingCommand, connection: Connection) -> RemotingCommand | None:
        """None lets ``request`` through; else the NO_PERMISSION answer saying why not."""
        peer = connection.attributes.get(_PEER)
        if not isinstance(peer, PeerAccess):
            peer = connection.attributes[_PEER] = PeerAccess(parse_host(connection.remote_address.rpartition(":")[0]))
        reason = peer.refusal(self.rules, request)
        if reason is None:
            return None
        self.refused += 1
        log.info("refused request code=%d from %s: %s", request.code, connection.remote_address, reason)
        return make_response(request, ResponseCode.NO_PERMISSION, reason)


def _stamp(path: Path) -> _Stamp | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size, status.st_ino


def _read(path: Path) -> AclRules:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AclConfigError(f"cannot read the ACL file {path}: {exc}") from None
    return parse_acl_yaml(text, str(path))


def _counts(rules: AclRules) -> tuple[int, int]:
    return len(rules.accounts), len(rules.global_white_addresses)
