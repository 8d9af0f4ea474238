"""Line-JSON over a local unix socket: the one framing and error form of mcpcli's two local
protocols (standard library only; it reads and writes nothing: `mcpcli.localsocket` does, on
blocking sockets).

Framing: one JSON object per line, UTF-8, at most `MAX_MESSAGE_BYTES` with its newline,
written compact (`jsontext.utf8`) and read strictly (`jsontext.loads`: no NaN, no nesting
deep enough to crash the reader); anything else is a `ProtocolViolation`. An answer is
`{"ok": true, ...}` or `{"ok": false, "error": {"message", "hint", "exit", "kind", "code",
"data"}}`: the error form, whose `kind` names what went wrong and `exit` the exit status
the asking command ends with (`EXIT_OF_KIND` when the answer gives none).

The two protocols:

- The session daemon's control protocol (`mcpcli.daemon`, `mcpcli.sessions`,
  `transports/daemon.py`, the `@NAME` fast path). The command's first line is a request
  `{"mcpcli": VERSION, "op": ...}` (`request`); the daemon's first line answers it (a
  `call` sent with `"notifications": true` may get the JSON-RPC notifications of its call
  first: the answer is the first line with `"ok"`). After a successful `attach` the
  connection carries MCP JSON-RPC messages, one per line, as over stdio. Kinds: the
  typed error the command re-raises (`transport`, `usage`, `auth`, `rpc` with the
  JSON-RPC `code` and `data`, `timeout`). The daemon's environment and directory are not
  the command's (it runs in `/`, with the environment of whichever command started it),
  so an `open` carries what depends on them: the entry already resolved
  (`ServerEntry.resolved()`: `${VAR}` filled in from the command's environment),
  `connect.env` with explicit values (a None would pass the daemon's own value through)
  and `connect.cwd` (the command's directory when the entry names none).
- The side channel of a script `mcp serve` runs (`mcpcli.toolsfile.channel`, `mcp
  script`): one request per connection, `{"token": ..., "op": ...}`, and one answer.
  Kinds: `invalid` (exit 2), `declined` (the client cannot answer that: 4), `failed` (it
  answered with an error, or the runtime failed: 5). A request that carries `"mcpcli":
  VERSION` (as `mcp script` sends) gets the error form above; one without it, the form
  documented before there was one (README "The side channel", kept for the scripts that
  speak it): `{"ok": false, "kind": ..., "error": MESSAGE}` (`flat_error`).
  `answer_error` reads a failed answer in either form.

The fast paths import this module before anything heavy: start-up time of `mcp tools
call @NAME` depends on it (a test checks what it loads).
"""

from __future__ import annotations

from mcpcli import jsontext

# `typing` costs milliseconds of start-up the fast path does not have to spend.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "ERROR_KINDS",
    "EXIT_OF_KIND",
    "MAX_MESSAGE_BYTES",
    "OPS",
    "VERSION",
    "ProtocolViolation",
    "answer_error",
    "decode",
    "encode",
    "error",
    "error_payload",
    "flat_error",
    "ok",
    "request",
]

#: The version both protocols' requests carry as `"mcpcli": VERSION` (the control
#: protocol's every first line; the side channel's requests that want the error form).
VERSION = 1
#: Bound on one line (a JSON-RPC message relayed by the daemon can carry a large resource;
#: a script's sampling answer, an image).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: The operations a command may ask the daemon for.
OPS = ("open", "list", "close", "restart", "logs", "attach", "call")
#: The exit status of each error kind when an answer gives none: the control protocol's
#: (mcpcli.errors.ExitCode), then the side channel's (`mcp script`'s exit statuses).
EXIT_OF_KIND = {"transport": 4, "usage": 2, "auth": 3, "rpc": 5, "timeout": 124,
                "invalid": 2, "declined": 4, "failed": 5}
#: The control protocol's kinds, each naming the typed error the command re-raises.
ERROR_KINDS = ("transport", "usage", "auth", "rpc", "timeout")


class ProtocolViolation(ValueError):
    """A line that is not one protocol message (bad JSON, not an object, too long)."""


def encode(message: dict[str, Any]) -> bytes:
    """One message as a line; raises ProtocolViolation when it exceeds the bound (or holds
    a value JSON cannot carry: NaN, an infinity)."""
    try:
        data = jsontext.utf8(message) + b"\n"
    except ValueError as exc:
        raise ProtocolViolation(f"not JSON: {exc}") from None
    if len(data) > MAX_MESSAGE_BYTES:
        raise ProtocolViolation(f"message of {len(data)} bytes exceeds {MAX_MESSAGE_BYTES}")
    return data


def decode(line: bytes | str) -> dict[str, Any]:
    """A line (with or without its newline) as a message object."""
    if isinstance(line, str):
        line = line.encode("utf-8", "surrogatepass")
    if len(line) > MAX_MESSAGE_BYTES:
        raise ProtocolViolation(f"line of {len(line)} bytes exceeds {MAX_MESSAGE_BYTES}")
    try:
        value = jsontext.loads(line)
    except ValueError as exc:  # UnicodeDecodeError and "nested too deeply" included
        raise ProtocolViolation(f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ProtocolViolation("a message must be a JSON object")
    return value


def request(op: str, **fields: Any) -> dict[str, Any]:
    """A command's first line to the daemon: `{"mcpcli": 1, "op": op, ...fields}`."""
    if op not in OPS:
        raise ValueError(f"unknown op {op!r}")
    return {"mcpcli": VERSION, "op": op, **fields}


def ok(**fields: Any) -> dict[str, Any]:
    """A successful answer."""
    return {"ok": True, **fields}


def error_payload(
    message: str,
    *,
    kind: str = "transport",
    hint: str | None = None,
    exit: int | None = None,
    code: int | None = None,
    data: Any = None,
) -> dict[str, Any]:
    """The `error` object of a failed answer: the error form."""
    if kind not in EXIT_OF_KIND:
        raise ValueError(f"unknown error kind {kind!r}")
    return {
        "message": message,
        "hint": hint,
        "exit": EXIT_OF_KIND[kind] if exit is None else exit,
        "kind": kind,
        "code": code,
        "data": data,
    }


def error(message: str, **details: Any) -> dict[str, Any]:
    """A failed answer: `{"ok": false, "error": error_payload(message, ...)}`."""
    return {"ok": False, "error": error_payload(message, **details)}


def flat_error(answer: dict[str, Any]) -> dict[str, Any]:
    """A failed answer in the side channel's first, documented form: `{"ok": false, "kind":
    KIND, "error": MESSAGE}` (for a request without `"mcpcli"`)."""
    form = answer["error"]
    return {"ok": False, "kind": form["kind"], "error": form["message"]}


def answer_error(answer: dict[str, Any]) -> dict[str, Any]:
    """The error form of a failed answer, whichever form it came in; an `error` that is
    neither an object nor text gives an empty message (the reader words it)."""
    form = answer.get("error")
    if isinstance(form, dict):
        return form
    kind = answer.get("kind")
    return {"message": form if isinstance(form, str) else "", "hint": None,
            "exit": EXIT_OF_KIND.get(kind) if isinstance(kind, str) else None,
            "kind": kind, "code": None, "data": None}
