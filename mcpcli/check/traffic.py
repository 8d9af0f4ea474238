"""Every message of one connection, in order, and the checks that are about that order.

`Traffic` is a session tracer (`ClientOptions.trace`): it sees each message as it
is sent or received, so what a server sent before the handshake ended, progress
that arrives after its request's answer, or a request a 2026-07-28 server must
never send can be told after the fact, whatever the client did with them.
"""

from __future__ import annotations

from typing import Any

from mcpcli.check.findings import Report
from mcpcli.core.jsonrpc import Batch, ErrorResponse, Message, Notification, Request, Response
from mcpcli.core.protocol import LOG_LEVEL_KEY

__all__ = ["Traffic"]

JSON = dict[str, Any]

#: Messages kept per connection: enough for any check, bounded for a chatty server.
MAX_MESSAGES = 20_000
#: What a 2026-07-28 server may send only on a `subscriptions/listen` stream.
LISTEN_ONLY = frozenset({
    "notifications/tools/list_changed", "notifications/prompts/list_changed",
    "notifications/resources/list_changed", "notifications/resources/updated",
})
#: Server requests and the client capability each needs (legacy revisions).
NEEDS_CAPABILITY = {"sampling/createMessage": "sampling", "roots/list": "roots",
                    "elicitation/create": "elicitation"}


class Traffic:
    """The messages of one connection, as a session tracer records them."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, Message]] = []

    def __call__(self, direction: str, message: Message | Batch) -> None:
        items = message.messages if isinstance(message, Batch) else [message]
        for item in items:
            if len(self.messages) < MAX_MESSAGES:
                self.messages.append((direction, item))

    def received(self, method: str) -> list[Notification | Request]:
        return [m for d, m in self.messages
                if d == "recv" and isinstance(m, (Notification, Request)) and m.method == method]

    def analyse(self, report: Report, era: str, check: tuple[str, str]) -> None:
        """Findings about order and about what the server sent unasked, under `check` (id, title)."""
        check_id, title = check
        report.check(check_id, title)
        if era == "legacy":
            self._before_handshake(report, check_id)
            self._legacy_requests(report, check_id)
        else:
            self._modern_forbidden(report, check_id)
        self._progress(report, check_id)

    def _before_handshake(self, report: Report, check_id: str) -> None:
        """Before `initialized`, a server should send no request but pings (lifecycle: "SHOULD
        NOT send requests other than pings and logging"). Notifications are not held to it:
        when one arrives relative to our `initialized` is a race on any transport."""
        for direction, message in self.messages:
            if direction == "send" and isinstance(message, Notification) and message.method == "notifications/initialized":
                return
            if direction == "recv" and isinstance(message, Request) and message.method != "ping":
                report.add(check_id, "warning", "notification-order",
                           f"the server sent the request {message.method} before the handshake ended (a server "
                           "should send no request but ping before the client's notifications/initialized)")

    def _legacy_requests(self, report: Report, check_id: str) -> None:
        """A server asks only for what the client declared (sampling, roots, elicitation)."""
        declared: JSON = {}
        for direction, message in self.messages:
            if direction == "send" and isinstance(message, Request) and message.method == "initialize":
                caps = (message.params or {}).get("capabilities")
                declared = caps if isinstance(caps, dict) else {}
        for direction, item in self.messages:
            if direction != "recv" or not isinstance(item, Request):
                continue
            needed = NEEDS_CAPABILITY.get(item.method)
            if needed is not None and needed not in declared:
                report.add(check_id, "warning", "capability",
                           f"the server sent {item.method}, but the client declared no {needed} capability")

    def _modern_forbidden(self, report: Report, check_id: str) -> None:
        """2026-07-28: no server requests, no unasked log messages, no change notifications
        outside a subscription."""
        asked_logs = listened = False
        for direction, message in self.messages:
            if direction == "send" and isinstance(message, Request):
                meta = (message.params or {}).get("_meta")
                if isinstance(meta, dict) and LOG_LEVEL_KEY in meta:
                    asked_logs = True
                if message.method == "subscriptions/listen":
                    listened = True
                continue
            if direction != "recv":
                continue
            if isinstance(message, Request):
                report.add(check_id, "error", "notification-forbidden",
                           f"the server sent the request {message.method}; a 2026-07-28 server must not send "
                           "requests (it asks through input_required results)")
            elif isinstance(message, Notification):
                if message.method == "notifications/message" and not asked_logs:
                    report.add(check_id, "error", "notification-forbidden",
                               "the server sent notifications/message for requests that asked for no log "
                               f"level (2026-07-28: only when a request's _meta has {LOG_LEVEL_KEY})")
                elif message.method in LISTEN_ONLY and not listened:
                    report.add(check_id, "error", "notification-forbidden",
                               f"the server sent {message.method} outside a subscriptions/listen stream "
                               "(2026-07-28 sends change notifications only there)")

    def _progress(self, report: Report, check_id: str) -> None:
        """Progress names a request of ours that is still running, and only increases."""
        tokens: dict[Any, Any] = {}  # progress token -> the request id it belongs to
        tasks: set[Any] = set()  # tokens of task-augmented requests: progress outlives the answer
        answered: set[Any] = set()
        last: dict[Any, float] = {}
        for direction, message in self.messages:
            if direction == "send" and isinstance(message, Request):
                params = message.params or {}
                meta = params.get("_meta")
                if isinstance(meta, dict) and "progressToken" in meta:
                    token = _key(meta["progressToken"])
                    tokens[token] = _key(message.id)
                    if "task" in params:
                        tasks.add(token)
            elif direction == "recv" and isinstance(message, (Response, ErrorResponse)):
                answered.add(_key(message.id))
            elif direction == "recv" and isinstance(message, Notification) and message.method == "notifications/progress":
                params = message.params or {}
                token = _key(params.get("progressToken"))
                value = params.get("progress")
                if token not in tokens:
                    report.add(check_id, "warning", "progress",
                               f"progress for token {params.get('progressToken')!r}, which no request of ours gave")
                    continue
                if tokens[token] in answered and token not in tasks:
                    report.add(check_id, "warning", "notification-order",
                               f"progress for token {params.get('progressToken')!r} came after its request was "
                               "answered (progress must stop when the request completes)")
                if not isinstance(value, (int, float)) or isinstance(value, bool):
                    report.add(check_id, "error", "progress",
                               f"notifications/progress with progress {value!r}, not a number")
                    continue
                if token in last and value <= last[token]:
                    report.add(check_id, "error", "progress",
                               f"progress went from {last[token]} to {value} (it must increase with each "
                               "notification)")
                last[token] = value


def _key(value: Any) -> Any:
    """Ids and tokens as dictionary keys (1 and "1" stay distinct; lists and objects never match)."""
    return (type(value).__name__, value) if isinstance(value, (int, str)) else ("other", repr(value))
