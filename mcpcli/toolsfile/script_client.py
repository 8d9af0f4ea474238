"""`mcp script ...`: the helper a served script runs to talk to the client.

Standard library only, so each callback starts fast. The served call's socket
and token come from `MCP_SCRIPT_SOCKET` / `MCP_SCRIPT_TOKEN` (see
`mcpcli.toolsfile.channel`). Answers go to stdout (JSON unless asked otherwise);
messages to stderr.

Exit status: 0 done (elicitation accepted); 1 the user declined or cancelled;
2 bad usage, or not inside a served call; 4 the client cannot answer (it did not
declare the capability) or the channel failed; 5 the client answered with an error.
"""

from __future__ import annotations

import json
import os
import socket
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["main"]

OK, DECLINED, USAGE, UNAVAILABLE, FAILED = 0, 1, 2, 4, 5
FIELD_TYPES = ("string", "integer", "number", "boolean")


class _Exit(Exception):
    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message or "")
        self.code = code
        self.message = message


def _parser() -> Any:
    import argparse  # only when the fast path does not apply (keeps callbacks quick)

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> Any:  # argparse exits 2 by itself; keep our format
            raise _Exit(USAGE, f"{message} (see `mcp script {self.prog.split()[-1]} --help`)"
                        if " " in self.prog else message)

    parser = _Parser(
        prog="mcp script",
        description="Talk back to the MCP client from a script run by `mcp serve` "
        "(progress, logs, elicitation, sampling, roots). Works only inside a served call.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("progress", help="Report progress: mcp script progress 50 100 -m 'half way'.")
    p.add_argument("progress", type=float)
    p.add_argument("total", type=float, nargs="?")
    p.add_argument("-m", "--message")

    p = sub.add_parser("log", help="Send a log message: mcp script log info 'text'.")
    p.add_argument("level", choices=["debug", "info", "notice", "warning", "error", "critical", "alert",
                                     "emergency"])
    p.add_argument("message", nargs="+")
    p.add_argument("--logger", help="Logger name (default: the tool's name).")
    p.add_argument("--json", action="store_true", help="MESSAGE is JSON data, sent as is.")

    p = sub.add_parser("elicit", help="Ask the user for input; prints the answer as JSON.")
    p.add_argument("message")
    p.add_argument("--field", action="append", default=[], metavar="NAME[:TYPE]",
                   help=f"A required field (TYPE: {', '.join(FIELD_TYPES)}; default string). Repeatable.")
    p.add_argument("--choice", action="append", default=[], metavar="NAME=A,B,C",
                   help="A required field with fixed choices. Repeatable.")
    p.add_argument("--schema", help="The requestedSchema as JSON (instead of --field/--choice).")
    p.add_argument("--key", default="elicit", help="The request key (MRTR inputRequests key).")
    p.add_argument("--content", action="store_true",
                   help="Print only the content object (exit 1 unless accepted).")
    p.add_argument("--get", metavar="FIELD",
                   help="Print only this field's value (text as is, other values as JSON; exit 1 unless accepted).")

    p = sub.add_parser("sample", help="Ask the client's model; prints the reply text.")
    p.add_argument("prompt")
    p.add_argument("--system", help="System prompt.")
    p.add_argument("--max-tokens", type=int, default=1000)
    p.add_argument("--key", default="sample")
    p.add_argument("--json", action="store_true", help="Print the whole CreateMessageResult as JSON.")

    p = sub.add_parser("roots", help="Print the client's roots as JSON.")
    p.add_argument("--key", default="roots")
    p.add_argument("--uris", action="store_true", help="One root URI per line instead of JSON.")

    p = sub.add_parser("changed", help="Tell subscribed clients that something changed: "
                       "tools, prompts, resources, or resource URI.")
    p.add_argument("kind", choices=["tools", "prompts", "resources", "resource"])
    p.add_argument("uri", nargs="?")

    p = sub.add_parser("ask", help="Send raw input requests: a JSON object {KEY: {method, params}}.")
    p.add_argument("requests", help="JSON, or - to read it from stdin.")
    return parser


def _send(payload: dict[str, Any]) -> dict[str, Any]:
    from mcpcli import localsocket
    from mcpcli.core import localrpc

    path = os.environ.get("MCP_SCRIPT_SOCKET")
    token = os.environ.get("MCP_SCRIPT_TOKEN")
    if not path or not token:
        raise _Exit(USAGE, "not inside a call served by `mcp serve` (MCP_SCRIPT_SOCKET is not set)")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(path)
            localsocket.send(sock, {"mcpcli": localrpc.VERSION, "token": token, **payload})
            reply = localsocket.LineReader(sock).read()
    except OSError as exc:
        raise _Exit(UNAVAILABLE, f"cannot reach the server's side channel ({exc.strerror or exc}); "
                    "is the call still running?") from None
    except localrpc.ProtocolViolation:
        raise _Exit(UNAVAILABLE, "malformed reply from the server") from None
    if reply is None:
        raise _Exit(UNAVAILABLE, "the server closed the side channel (the call was cancelled?)")
    if reply.get("ok") is not True:
        error = localrpc.answer_error(reply)
        code = error.get("exit")
        raise _Exit(code if code in (USAGE, UNAVAILABLE, FAILED) else FAILED, str(error.get("message") or "failed"))
    return reply


def _ask(key: str, method: str, params: dict[str, Any]) -> Any:
    reply = _send({"op": "ask", "requests": {key: {"method": method, "params": params}}})
    result = reply.get("result") or {}
    if key not in result:
        raise _Exit(FAILED, "the client's answer is missing")
    return result[key]


def _field_schema(spec: str) -> tuple[str, dict[str, Any]]:
    name, _, kind = spec.partition(":")
    kind = kind or "string"
    if not name or kind not in FIELD_TYPES:
        raise _Exit(USAGE, f"--field {spec!r}: expected NAME or NAME:TYPE with TYPE one of {', '.join(FIELD_TYPES)}")
    return name, {"type": kind}


def _out(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


def _run(args: Any) -> int:
    command = _COMMANDS.get(args.command)
    if command is None:  # pragma: no cover - argparse only accepts the known commands
        raise _Exit(USAGE, f"unknown command {args.command!r}")
    return command(args)


def _progress(args: Any) -> int:
    payload: dict[str, Any] = {"op": "progress", "progress": _num(args.progress)}
    if args.total is not None:
        payload["total"] = _num(args.total)
    if args.message:
        payload["message"] = args.message
    _send(payload)
    return OK


def _log(args: Any) -> int:
    text = " ".join(args.message)
    data: Any = text
    if args.json:
        try:
            data = json.loads(text)
        except ValueError:
            raise _Exit(USAGE, "--json: MESSAGE is not valid JSON") from None
    payload = {"op": "log", "level": args.level, "data": data}
    if args.logger:
        payload["logger"] = args.logger
    _send(payload)
    return OK


def _elicit(args: Any) -> int:
    answer = _ask(args.key, "elicitation/create", {"message": args.message, "requestedSchema": _elicit_schema(args)})
    accepted = isinstance(answer, dict) and answer.get("action") == "accept"
    if args.get:
        content = answer.get("content") if accepted and isinstance(answer.get("content"), dict) else {}
        value = content.get(args.get)
        if accepted and value is not None:
            _out(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    elif args.content:
        _out(json.dumps(answer.get("content", {}) if accepted else {}, ensure_ascii=False))
    else:
        _out(json.dumps(answer, ensure_ascii=False))
    return OK if accepted else DECLINED


def _elicit_schema(args: Any) -> dict[str, Any]:
    """The requestedSchema: --schema as given, else built from --field and --choice."""
    if args.schema:
        try:
            schema = json.loads(args.schema)
        except ValueError:
            raise _Exit(USAGE, "--schema is not valid JSON") from None
        if not isinstance(schema, dict):
            raise _Exit(USAGE, "--schema must be a JSON object")
        return schema
    props: dict[str, Any] = {}
    for spec in args.field:
        name, prop = _field_schema(spec)
        props[name] = prop
    for spec in args.choice:
        name, _, values = spec.partition("=")
        options = [v for v in values.split(",") if v]
        if not name or not options:
            raise _Exit(USAGE, f"--choice {spec!r}: expected NAME=A,B,C")
        props[name] = {"type": "string", "enum": options}
    schema = {"type": "object", "properties": props}
    if props:
        schema["required"] = list(props)
    return schema


def _sample(args: Any) -> int:
    params: dict[str, Any] = {
        "messages": [{"role": "user", "content": {"type": "text", "text": args.prompt}}],
        "maxTokens": args.max_tokens,
    }
    if args.system:
        params["systemPrompt"] = args.system
    answer = _ask(args.key, "sampling/createMessage", params)
    if args.json:
        _out(json.dumps(answer, ensure_ascii=False))
        return OK
    content = answer.get("content") if isinstance(answer, dict) else None
    blocks = content if isinstance(content, list) else [content]
    texts = [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    _out("\n".join(texts))
    return OK


def _roots(args: Any) -> int:
    answer = _ask(args.key, "roots/list", {})
    if args.uris:
        roots = answer.get("roots", []) if isinstance(answer, dict) else []
        for root in roots:
            if isinstance(root, dict) and isinstance(root.get("uri"), str):
                _out(root["uri"])
        return OK
    _out(json.dumps(answer, ensure_ascii=False))
    return OK


def _changed(args: Any) -> int:
    if (args.kind == "resource") != (args.uri is not None):
        raise _Exit(USAGE, "give a URI with `resource`, and only then")
    payload = {"op": "changed", "kind": args.kind}
    if args.uri is not None:
        payload["uri"] = args.uri
    _send(payload)
    return OK


def _ask_raw(args: Any) -> int:
    text = sys.stdin.read() if args.requests == "-" else args.requests
    try:
        requests = json.loads(text)
    except ValueError:
        raise _Exit(USAGE, "REQUESTS is not valid JSON") from None
    if not isinstance(requests, dict):
        raise _Exit(USAGE, "REQUESTS must be a JSON object {KEY: {method, params}}")
    reply = _send({"op": "ask", "requests": requests})
    _out(json.dumps(reply.get("result") or {}, ensure_ascii=False))
    return OK


_COMMANDS = {
    "progress": _progress,
    "log": _log,
    "elicit": _elicit,
    "sample": _sample,
    "roots": _roots,
    "changed": _changed,
    "ask": _ask_raw,
}


def _num(value: float) -> float | int:
    return int(value) if value.is_integer() else value


LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def _fast(args: list[str]) -> dict[str, Any] | None:
    """`progress N [TOTAL] [-m MSG]` and `log LEVEL MESSAGE...`, the frequent callbacks,
    parsed without importing argparse; anything else (or unusual) goes to argparse."""
    if not args or any(a.startswith("-") and a not in ("-m", "--message") for a in args):
        return None
    if args[0] == "progress" and 2 <= len(args) <= 5:
        rest = args[1:]
        message = None
        if len(rest) >= 2 and rest[-2] in ("-m", "--message"):
            message, rest = rest[-1], rest[:-2]
        try:
            numbers = [float(x) for x in rest]
        except ValueError:
            return None
        if not 1 <= len(numbers) <= 2:
            return None
        payload: dict[str, Any] = {"op": "progress", "progress": _num(numbers[0])}
        if len(numbers) == 2:
            payload["total"] = _num(numbers[1])
        if message:
            payload["message"] = message
        return payload
    if args[0] == "log" and len(args) >= 3 and args[1] in LEVELS and "-m" not in args and "--message" not in args:
        return {"op": "log", "level": args[1], "data": " ".join(args[2:])}
    return None


def main(argv: list[str] | None = None, prog: str = "mcp") -> int:
    """Run `mcp script ARGV`; returns the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    try:
        fast = _fast(args_list)
        if fast is not None:
            _send(fast)
            return OK
        parser = _parser()
        try:
            args = parser.parse_args(args_list)
        except SystemExit as exc:  # --help
            return int(exc.code or 0)
        return _run(args)
    except _Exit as exc:
        if exc.message:
            sys.stderr.write(f"{prog} script: error: {exc.message}\n")
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return OK
