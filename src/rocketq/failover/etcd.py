"""A small etcd v3 client over etcd's JSON gateway (``/v3/kv/range``, ``/v3/kv/txn``, ``/v3/lease/*``),
on aiohttp: what failover needs, nothing more (docs/failover.md#why-the-json-gateway).

etcd's gateway is its gRPC API as JSON over HTTP/1.1: keys and values travel base64-encoded, 64-bit
numbers as strings, and fields equal to their zero value are left out of answers (``succeeded`` of a
failed transaction, ``TTL`` of a lease that is gone). A request goes to the first endpoint that answers;
one that cannot be reached sends it on to the next.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S = 2.0


class EtcdError(Exception):
    """No endpoint answered, or one answered with an error."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str | None) -> bytes:
    return base64.b64decode(text) if text else b""


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: bytes
    value: bytes
    create_revision: int
    mod_revision: int
    lease: int

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> KeyValue:
        return cls(
            key=_unb64(item.get("key")),
            value=_unb64(item.get("value")),
            create_revision=int(item.get("create_revision", 0)),
            mod_revision=int(item.get("mod_revision", 0)),
            lease=int(item.get("lease", 0)),
        )


def prefix_end(prefix: bytes) -> bytes:
    """The first key after every key starting with ``prefix`` (etcd's ``range_end`` for a prefix)."""
    end = bytearray(prefix)
    while end:
        if end[-1] < 0xFF:
            end[-1] += 1
            return bytes(end)
        end.pop()
    return b"\0"


# -- the parts of a transaction (as the gateway spells them) ---------------------------------------------


def absent(key: bytes) -> dict[str, Any]:
    """Compare: ``key`` does not exist."""
    return {"key": _b64(key), "target": "CREATE", "result": "EQUAL", "create_revision": "0"}


def modified_at(key: bytes, revision: int) -> dict[str, Any]:
    """Compare: ``key`` was last written at ``revision`` (0: it does not exist)."""
    return {"key": _b64(key), "target": "MOD", "result": "EQUAL", "mod_revision": str(revision)}


def value_is(key: bytes, value: bytes) -> dict[str, Any]:
    """Compare: ``key`` holds ``value``."""
    return {"key": _b64(key), "target": "VALUE", "result": "EQUAL", "value": _b64(value)}


def put(key: bytes, value: bytes, lease: int = 0) -> dict[str, Any]:
    """Operation: write ``value`` at ``key`` (bound to ``lease`` unless 0)."""
    request: dict[str, Any] = {"key": _b64(key), "value": _b64(value)}
    if lease:
        request["lease"] = str(lease)
    return {"requestPut": request}


def delete(key: bytes) -> dict[str, Any]:
    return {"requestDeleteRange": {"key": _b64(key)}}


class EtcdClient:
    """``async with EtcdClient(["http://127.0.0.1:2379"]) as etcd:``. Use on one event loop."""

    def __init__(self, endpoints: Sequence[str], *, timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        if not endpoints:
            raise ValueError("no etcd endpoints")
        self.endpoints = [endpoint.rstrip("/") for endpoint in endpoints]
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._session: aiohttp.ClientSession | None = None
        self._preferred = 0  # the endpoint that answered last

    async def __aenter__(self) -> EtcdClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        errors: list[str] = []
        count = len(self.endpoints)
        for step in range(count):
            index = (self._preferred + step) % count
            endpoint = self.endpoints[index]
            try:
                async with self._session.post(endpoint + path, json=body) as response:
                    answer: dict[str, Any] = await response.json(content_type=None)
                    if response.status != 200 or "error" in answer:
                        raise EtcdError(f"etcd {endpoint}{path}: {response.status} {answer.get('message', answer)}")
            except (aiohttp.ClientError, TimeoutError) as exc:
                errors.append(f"{endpoint}: {exc or type(exc).__name__}")
                continue
            self._preferred = index
            return answer
        raise EtcdError(f"no etcd endpoint answered {path}: {'; '.join(errors)}")

    # -- keys -----------------------------------------------------------------------------------------

    async def get(self, key: bytes) -> KeyValue | None:
        answer = await self._call("/v3/kv/range", {"key": _b64(key)})
        kvs = answer.get("kvs") or []
        return KeyValue.from_json(kvs[0]) if kvs else None

    async def get_prefix(self, prefix: bytes) -> list[KeyValue]:
        answer = await self._call("/v3/kv/range", {"key": _b64(prefix), "range_end": _b64(prefix_end(prefix))})
        return [KeyValue.from_json(item) for item in answer.get("kvs") or []]

    async def put(self, key: bytes, value: bytes, lease: int = 0) -> None:
        await self._call("/v3/kv/put", put(key, value, lease)["requestPut"])

    async def txn(
        self,
        compare: Sequence[dict[str, Any]],
        success: Sequence[dict[str, Any]],
        failure: Sequence[dict[str, Any]] = (),
    ) -> bool:
        """Run ``success`` if every ``compare`` holds, else ``failure``, atomically; True for the first."""
        answer = await self._call(
            "/v3/kv/txn", {"compare": list(compare), "success": list(success), "failure": list(failure)}
        )
        return bool(answer.get("succeeded", False))

    # -- leases ---------------------------------------------------------------------------------------

    async def grant(self, ttl_s: int) -> tuple[int, int]:
        """A new lease of ``ttl_s`` seconds: (its id, the TTL etcd gave it)."""
        answer = await self._call("/v3/lease/grant", {"TTL": str(ttl_s)})
        return int(answer["ID"]), int(answer.get("TTL", 0))

    async def keep_alive(self, lease: int) -> int:
        """Renew ``lease``; the TTL it has again (0: the lease is gone, it expired)."""
        answer = await self._call("/v3/lease/keepalive", {"ID": str(lease)})
        return int((answer.get("result") or {}).get("TTL", 0))

    async def revoke(self, lease: int) -> None:
        """End ``lease`` now (its keys are deleted)."""
        await self._call("/v3/lease/revoke", {"ID": str(lease)})
