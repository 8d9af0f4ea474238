"""The state one server shares with its helpers (`Runtime`), and the tokens it signs.

`Runtime` is created by `mcpcli.server.core.Server` and handed to the request
handlers, the MRTR rounds and the task store: they depend on it, never on the
`Server`. It is the one owner of what they share: the backend, the settings, the
signer, the 2026 calls parked between rounds, the subscribers to change
notifications, the server's task group and the tasks of its 2026 calls.

Tamper-evident tokens the server hands to clients: pagination cursors and MRTR
`requestState`. Both are opaque to the client and signed with a per-process random key, so a
client can neither forge them nor carry them to another server process (a
restarted server rejects old ones, which the protocol allows: an invalid cursor
is -32602, an invalid requestState is -32602).

Format: `base64url(payload) "." base64url(HMAC-SHA256(key, payload)[:16])`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from mcpcli.core.jsonrpc import INVALID_PARAMS
from mcpcli.errors import RPCError
from mcpcli.server.backend import Backend
from mcpcli.server.calls import Continuation
from mcpcli.server.subscriptions import Sink

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from mcpcli.jobs import JobSet

__all__ = ["Runtime", "Signer", "request_digest"]

#: Parameters that change between MRTR rounds and so are not part of the request's identity.
_ROUND_PARAMS = frozenset({"_meta", "inputResponses", "requestState"})


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def request_digest(method: str, params: dict[str, Any] | None) -> str:
    """A digest of what identifies a request across MRTR retries (not its round data)."""
    salient = {k: v for k, v in (params or {}).items() if k not in _ROUND_PARAMS}
    text = json.dumps([method, salient], sort_keys=True, separators=(",", ":"), default=str)
    return _b64(hashlib.sha256(text.encode("utf-8")).digest()[:18])


class Signer:
    """Signs and verifies small JSON payloads with a key that never leaves the process."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key if key is not None else secrets.token_bytes(32)

    def _tag(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()[:16]

    def sign(self, obj: Any) -> str:
        payload = json.dumps(obj, separators=(",", ":")).encode("utf-8")
        return _b64(payload) + "." + _b64(self._tag(payload))

    def verify(self, token: Any) -> Any:
        """The payload of a token we signed; None for anything else."""
        if not isinstance(token, str) or token.count(".") != 1 or len(token) > 1 << 20:
            return None
        body, tag = token.split(".")
        try:
            payload = _unb64(body)
            given = _unb64(tag)
        except (binascii.Error, ValueError):
            return None
        if not hmac.compare_digest(given, self._tag(payload)):
            return None
        try:
            return json.loads(payload)
        except ValueError:  # pragma: no cover - we signed it, so it parses
            return None

    # -- cursors -------------------------------------------------------------------

    def cursor(self, method: str, offset: int) -> str:
        return self.sign([method, offset])

    def offset(self, method: str, cursor: Any) -> int:
        """The list offset a cursor stands for; -32602 when it is not one of ours."""
        if cursor is None or cursor == "":
            return 0
        data = self.verify(cursor)
        if (
            not isinstance(data, list)
            or len(data) != 2
            or data[0] != method
            or not isinstance(data[1], int)
            or data[1] < 0
        ):
            raise RPCError(INVALID_PARAMS, "Invalid cursor", {"cursor": str(cursor)[:200]})
        return data[1]

    # -- requestState ----------------------------------------------------------------

    def request_state(
        self, *, continuation: str, digest: str, principal: str, ttl: float, answers: dict[str, Any]
    ) -> str:
        return self.sign(
            {"c": continuation, "d": digest, "p": principal, "e": int(time.time() + ttl), "a": answers}
        )

    def open_request_state(self, token: Any, *, digest: str, principal: str) -> dict[str, Any]:
        """Verify a requestState for this request; -32602 when forged, stale or misplaced."""
        data = self.verify(token)
        if not isinstance(data, dict) or not isinstance(data.get("a"), dict):
            raise RPCError(INVALID_PARAMS, "Invalid requestState: integrity check failed")
        if data.get("d") != digest:
            raise RPCError(INVALID_PARAMS, "Invalid requestState: it belongs to a different request")
        if data.get("p") != principal:
            raise RPCError(INVALID_PARAMS, "Invalid requestState: it belongs to a different client")
        expires = data.get("e")
        if not isinstance(expires, int) or expires < time.time():
            raise RPCError(INVALID_PARAMS, "Invalid requestState: it has expired; call again")
        return data


class Runtime:
    """What one server's helpers share: its backend, settings and state (see the module doc)."""

    def __init__(
        self,
        backend: Backend,
        *,
        page_size: int,
        list_ttl_ms: int,
        read_ttl_ms: int,
        cache_scope: str,
        input_ttl: float,
        max_parked: int,
        secret: bytes | None,
    ) -> None:
        self.backend = backend
        self.page_size = page_size
        self.list_ttl_ms = list_ttl_ms
        self.read_ttl_ms = read_ttl_ms
        self.cache_scope = cache_scope
        #: Seconds a 2026 call may wait for the client's retry with its input.
        self.input_ttl = input_ttl
        self.max_parked = max_parked
        #: Signs pagination cursors and requestStates.
        self.signer = Signer(secret)
        #: 2026 calls waiting for the client's retry, by continuation id, oldest first.
        self.parked: OrderedDict[str, Continuation] = OrderedDict()
        #: Everyone who receives change notifications (connections, listen streams).
        self.sinks: set[Sink] = set()
        #: The server's task group (the task store's work), while it runs (`async with server`).
        self.tg: TaskGroup | None = None
        #: The tasks of 2026 calls that outlive their request (parked for input, or run
        #: apart from it: see `mrtr`), in `tg`'s lifetime (cheaper than its tasks).
        self.calls: JobSet | None = None

    def task_group(self) -> TaskGroup:
        """The running server's task group (the task store's work runs there)."""
        if self.tg is None:
            raise RuntimeError("the server is not running (use `async with server:`)")
        return self.tg

    def call_tasks(self) -> JobSet:
        """Where a 2026 call runs, so that it can outlive its request (MRTR, tasks)."""
        if self.calls is None:
            raise RuntimeError("the server is not running (use `async with server:`)")
        return self.calls

    def offer(self, method: str, params: dict[str, Any]) -> None:
        """Offer a notification to every subscriber (each takes what it asked for)."""
        for sink in list(self.sinks):
            sink.offer(method, params)
