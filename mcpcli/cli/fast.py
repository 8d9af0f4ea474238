"""The session fast path: `mcp tools call @NAME ...` (or a keepAlive server's NAME) without
loading the CLI.

A warm call through a session should cost little more than starting Python, so
`main()` tries this first: when stdout is not a terminal, the command could not
prompt anyway (stdin or stderr is not one either) and every flag is one this
module fully understands (`--arg`/`-a`, `--args JSON`, `--timeout`,
`--max-timeout`, `--no-validate`, `--json`, `--jsonl`, `--quiet`, `--jq` with
`-r`, `--max-chars`, `--meta` and `--traceparent`), it sends the daemon's `call` op
and prints what `mcp tools call` prints: the result as compact JSON on stdout (or
what `--jq` makes of it), errors as `mcp: error: ...` / `mcp: hint: ...` (or the
`--json` error object) with the one-shot exit codes. The daemon parses and validates
the arguments with the tool's cached schema, reads `--meta` as the command's client
would, and its requests carry the command's trace context (`--traceparent`,
`TRACEPARENT`) as the full path's would.

A TARGET without `@` is tried when our config file makes it a keepAlive server: the
`call` op then carries what the daemon needs to check that the session is that
server's, as `open` checks when the full path joins it (the config file, the values
of the variables its entry names, the profile); when it is not (no session yet,
another server, another profile), the daemon says so and the full path runs.

Anything else returns None and the normal path runs, unchanged: a terminal, any
other flag, `KEY=@FILE` and `--args @FILE|-` (read in the command's directory),
a value click would reject, an invalid `--jq` filter, a malformed trace context,
`OTEL_*` variables asking for spans (the full path records them), no daemon, or no
such session. The flags are read from their one declaration (`mcpcli.core.flags`,
which the click options are built from) and errors printed by the one printer
(`errors.print_error`). Only the standard library, `mcpcli.text` (`re` only),
`mcpcli.core.flags`, `mcpcli.jqfilter` (jq only with `--jq`), `mcpcli.core.tracecontext`
(only with a trace), the daemon's control protocol (`mcpcli.core.localrpc`) and run
directory (`mcpcli.rundir`), and on an error `mcpcli.errors` are imported (a test
checks): no click, anyio, httpx, rich or jsonschema. `MCPCLI_NO_FAST_PATH=1` turns it off.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["try_call"]

#: The flags of `tools call` this path reads (`core.flags`, by field), as click reads them.
TAKEN = ("items", "args_json", "timeout", "max_timeout", "no_validate", "as_json", "jsonl", "quiet", "jq_filter",
         "raw", "max_chars", "meta", "traceparent")


def _plain_profile(name: str) -> bool:
    """Whether MCP_PROFILE is empty or a valid profile name (`mcpcli.auth.check_profile`, without `re`)."""
    allowed = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
    return not name or (len(name) <= 32 and name[0] not in "_-" and all(c in allowed for c in name))


def _parse(tokens: list[str]) -> dict[str, Any] | None:
    """The call's parts from the tokens after `tools call`, or None to leave them to click:
    `session` for `@NAME`, `server` for a plain NAME (perhaps a keepAlive server's)."""
    parsed = parse_flags(tokens, meta=True)
    if parsed is None:
        return None
    positionals = parsed.pop("positionals")
    if len(positionals) != 2 or len(positionals[0]) < 2:
        return None
    target = positionals[0]
    if target.startswith("@"):
        parsed.update(session=target[1:], server=None, tool=positionals[1])
    elif "/" in target or target.endswith((".yaml", ".yml")):
        return None  # a URL or a file
    else:
        parsed.update(session=None, server=target, tool=positionals[1])
    return parsed


def parse_flags(tokens: list[str], *, meta: bool = False) -> dict[str, Any] | None:
    """The flags of a `tools call` (and its positionals, in order), or None to leave them to
    click: shared with the one-shot stdio path (`mcpcli.cli.oneshot`), which takes the same
    flags but `--meta` (`meta`: take it). `core.flags.parse` reads them as click would; what
    is left out here is what this path does not do itself: a file or stdin to read."""
    from mcpcli.core import flags

    parsed = flags.parse(tokens, flags.by_name(name for name in TAKEN if meta or name != "meta"))
    if parsed is None:
        return None
    values, positionals = parsed
    if any("=@" in item for item in values["items"]):
        return None  # a file (or stdin) the command reads, not the daemon
    json_text = values["args_json"]
    if json_text is not None and (json_text.startswith("@") or json_text == "-"):
        return None
    if (values["as_json"] and values["jsonl"]) or (values["raw"] and values["jq_filter"] is None):
        return None  # a usage error click words
    if not _plain_profile(os.environ.get("MCP_PROFILE") or ""):
        return None  # click's (check_profile) to word; a valid one changes nothing for a session or stdio
    trace = trace_meta(values["traceparent"])
    if trace is None:
        return None
    # --max-chars cuts human output only, never JSON: read (and checked) as click reads it, then moot.
    return {"positionals": positionals, "args": values["items"], "json": json_text, "timeout": values["timeout"],
            "max_timeout": values["max_timeout"], "jq": values["jq_filter"], "meta": values.get("meta", []),
            "validate": not values["no_validate"], "quiet": values["quiet"], "raw": values["raw"], "trace": trace,
            "json_errors": values["as_json"] or values["jsonl"] or values["jq_filter"] is not None}


def compile_jq(call: dict[str, Any]) -> bool:
    """Compile the call's `--jq` filter (`call["jq_program"]`, None without one); False when
    it is invalid (the full path words that, before it connects)."""
    call["jq_program"] = None
    if call["jq"] is None:
        return True
    from mcpcli import jqfilter

    try:
        call["jq_program"] = jqfilter.compile_filter(call["jq"])
    except ValueError:
        return False
    return True


def emit(result: dict[str, Any], call: dict[str, Any]) -> str | None:
    """Print `result` as `Output.emit` prints it on a stdout that is not a terminal: compact
    JSON, or each value `--jq` makes of it (a string bare with `-r`); the `--jq` error
    instead when the filter fails on it (nothing is printed then). A reader that left
    raises BrokenPipeError."""
    import json

    outputs: list[Any] = [result]
    if call["jq_program"] is not None:
        from mcpcli import jqfilter

        try:
            outputs = jqfilter.values(call["jq_program"], result)
        except ValueError as exc:
            return f"--jq: {jqfilter.error_message(exc)}"
    for item in outputs:
        if call["raw"] and isinstance(item, str):
            sys.stdout.write(item + "\n")
        else:
            sys.stdout.write(json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    return None


def config_path() -> str:
    """Our config file, as `mcpcli.config.default_config_path` finds it on a POSIX system
    (a test holds them equal): `MCP_CONFIG`, else `$XDG_CONFIG_HOME/mcpcli/mcp.json`."""
    path = os.environ.get("MCP_CONFIG")
    if not path:
        base = os.environ.get("XDG_CONFIG_HOME")
        if not base or not os.path.isabs(base):
            base = os.path.join(os.path.expanduser("~"), ".config")
        path = os.path.join(base, "mcpcli", "mcp.json")
    return os.path.abspath(path)


def _variables(value: Any, found: set[str]) -> None:
    """The names after each `${` (or `${env:`) in the strings of `value`: at least every
    variable `mcpcli.config.interpolate` may read there (one it would miss the daemon finds
    unset, and the full path runs)."""
    if isinstance(value, dict):
        for item in value.values():
            _variables(item, found)
    elif isinstance(value, list):
        for item in value:
            _variables(item, found)
    elif isinstance(value, str):
        start = value.find("${")
        while start >= 0:
            end = start = start + (6 if value.startswith("env:", start + 2) else 2)
            while end < len(value) and (value[end] == "_" or (value[end].isascii() and value[end].isalnum())):
                end += 1
            found.add(value[start:end])
            start = value.find("${", end)


def _keep_alive(server: str) -> dict[str, Any] | None:
    """What the daemon checks a keepAlive server's session against (see the module's doc),
    or None when SERVER is no keepAlive server of our config file (or the file cannot be
    read: the full path says why)."""
    import json

    path = config_path()
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        return None
    servers = doc.get("mcpServers", doc.get("servers")) if isinstance(doc, dict) else None
    entry = servers.get(server) if isinstance(servers, dict) else None
    if not isinstance(entry, dict) or entry.get("keepAlive") is not True:
        return None
    names: set[str] = set()
    _variables(entry, names)
    profile = os.environ.get("MCP_PROFILE")  # checked by parse_flags; "default" is no profile
    return {"server": server, "config": path, "profile": None if profile in (None, "", "default") else profile,
            "env": {name: os.environ[name] for name in sorted(names) if name in os.environ}}


def trace_meta(flag: str | None) -> dict[str, str] | None:
    """The `_meta` entries of the trace the call continues (`--traceparent`, else
    `TRACEPARENT` with `TRACESTATE`; {}: none), as the full path's client sends them
    when it records no spans. None leaves the command to the full path: a value it
    refuses or warns of, or `OTEL_*` variables asking for spans (it records them)."""
    if any(name.startswith("OTEL_") for name in os.environ):
        from mcpcli.spans import wanted

        if wanted() is not None:
            return None
    if flag is None and not os.environ.get("TRACEPARENT"):
        return {}
    from mcpcli.core import tracecontext

    context = tracecontext.parse(flag) if flag is not None else tracecontext.from_environ(os.environ)
    return context.meta() if context is not None else None


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _stdout_gone() -> int:
    """The reader of our stdout left: as `_root._stdout_gone`, exit 0 quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
    except OSError:
        pass
    return 0


def _answer(reader: Any, quiet: bool) -> dict[str, Any] | None:
    """The daemon's answer, after printing the notifications the call caused before it.

    Log messages are shown as the normal path's `notification_printer` shows them
    without --log-level (the fast path takes none): warnings and worse, none with -q.
    """
    from mcpcli.text import UNASKED_LOG_FLOOR, log_line, log_rank

    floor = log_rank(UNASKED_LOG_FLOOR)
    while True:
        message = reader.read()
        if message is None or "ok" in message:
            return message
        params = message.get("params")
        if (message.get("method") == "notifications/message" and isinstance(params, dict) and not quiet
                and log_rank(params.get("level")) >= floor):
            sys.stderr.write(log_line(params) + "\n")
            sys.stderr.flush()


def try_call(args: list[str], prog: str = "mcp") -> int | None:
    """Run `tools call @NAME ...` through the daemon's `call` op; None: take the normal path."""
    if len(args) < 4 or args[0] != "tools" or args[1] != "call" or os.environ.get("MCPCLI_NO_FAST_PATH"):
        return None
    if os.environ.get("MCP_SPILL_DIR"):
        return None  # --spill's default: the normal path's Output does the spilling
    if _isatty(1) or (_isatty(0) and _isatty(2)):
        return None  # human output, or a prompt the daemon could not show
    call = _parse(args[2:])
    if call is None:
        return None
    keep_alive = None
    if call["server"] is not None:
        keep_alive = _keep_alive(call["server"])
        if keep_alive is None:
            return None
        # Each profile has its own keepAlive session (`connect._session_transport`).
        profile = keep_alive["profile"]
        call["session"] = call["server"] if profile is None else f"{call['server']}.{profile}"
    if not compile_jq(call):
        return None
    import signal
    import socket

    from mcpcli import localsocket, rundir
    from mcpcli.core import localrpc

    try:
        where = rundir.socket_file(create=False)
    except OSError:
        return None  # no run directory, or an unsafe one: the normal path says which

    def terminated(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM, as for the one-shot command: "interrupted", 130

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        previous = signal.signal(signal.SIGTERM, terminated)
        try:
            try:
                sock.connect(where)
            except OSError:
                return None  # no daemon: the normal path starts none for @NAME and says so
            trace = {"trace": call["trace"]} if call["trace"] else {}
            localsocket.send(sock, localrpc.request(
                "call", name=call["session"], tool=call["tool"], args=call["args"], json=call["json"],
                timeout=call["timeout"], max_timeout=call["max_timeout"], validate=call["validate"],
                notifications=True, meta=call["meta"], keep_alive=keep_alive, **trace))
            try:
                answer = _answer(localsocket.LineReader(sock), call["quiet"])
            except (localrpc.ProtocolViolation, OSError) as exc:
                from mcpcli.errors import ProtocolError

                return print_error(ProtocolError(f"the session daemon sent a bad answer: {exc}"), prog, call)
        finally:
            signal.signal(signal.SIGTERM, previous)
    except KeyboardInterrupt:
        from mcpcli.errors import Interrupted

        return print_error(Interrupted("interrupted"), prog, call)
    finally:
        sock.close()  # a call still in flight is cancelled on the server
    name = call["session"]
    if answer is not None and answer.get("fallback") is True:
        return None  # not this keepAlive server's session (yet): the full path opens or joins it
    if answer is None:
        from mcpcli.errors import ConnectionClosed

        return print_error(ConnectionClosed(
            f"session {name!r} closed the connection",
            hint=f"`mcp session list` shows its state; `mcp session restart {name}`"), prog, call)
    if answer.get("ok") is not True:
        report = answer.get("error")
        if isinstance(report, dict) and report.get("message") == f"no session {name!r}":
            return None  # the normal path's own words for it
        return print_error(report, prog, call)  # as the daemon sent it
    result = answer.get("result")
    if not isinstance(result, dict):
        from mcpcli.errors import ProtocolError

        return print_error(ProtocolError("the session daemon sent a malformed answer"), prog, call)
    try:
        failed = emit(result, call)
    except BrokenPipeError:
        return _stdout_gone()
    if failed is not None:
        from mcpcli.errors import UsageError

        return print_error(UsageError(failed), prog, call)
    if result.get("isError"):
        from mcpcli.errors import ToolError

        return print_error(ToolError(f"tool {call['tool']!r} reported an error"), prog, call)
    return 0


def print_error(error: Any, prog: str, call: dict[str, Any]) -> int:
    """Print a typed error (or the daemon's error form, as sent) as `mcp tools call` would
    (`errors.print_error`, the one printer) and return its exit status."""
    from mcpcli import errors

    return errors.print_error(error, prog, json_errors=call["json_errors"])
