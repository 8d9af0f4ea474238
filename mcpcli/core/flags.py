"""The client's command-line flags and their defaults, declared once, as data.

Each `Flag` says its names, the kind of value it takes, its default (and the variable
that stands in for it), its help text and the field it fills. Two readers share the
table: the click decorators (`mcpcli.cli._options` builds each click option from its
flag, so `--help`, the man pages and the completions come from here) and the fast
paths' argv reader (`parse`, for `mcp tools call` through the daemon or to a stdio
server, which run before click is imported). The defaults the library falls back on
(`ClientOptions`, the protocol core's `Exchange`, the gateway's upstreams) are the
constants below, so a default is written in one place.

The standard library only, and nothing at import beyond `mcpcli.text` (itself `re`
only, and loaded by the fast paths anyway): start-up time of the fast paths depends on it.
"""

from __future__ import annotations

import os

from mcpcli.text import LOG_LEVELS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

__all__ = [
    "CONNECTION",
    "FLAGS",
    "LARGE_RESULT",
    "MAX_TIMEOUT",
    "OUTPUT",
    "PROBE_TIMEOUT",
    "PROBE_TIMEOUT_ENV",
    "TIMEOUT",
    "TOOL_CALL",
    "Flag",
    "by_name",
    "count",
    "parse",
    "probe_timeout",
    "seconds",
]

#: Seconds to wait for each response (`--timeout`); progress notifications restart the clock.
TIMEOUT = 60.0
#: Hard limit per request, however much progress is reported (`--max-timeout`).
MAX_TIMEOUT = 3600.0
#: How long a stdio server may stay silent on the era probe before it is called legacy.
PROBE_TIMEOUT = 5.0
#: The variable that sets PROBE_TIMEOUT (no flag: a person rarely needs it).
PROBE_TIMEOUT_ENV = "MCP_PROBE_TIMEOUT"

#: The kinds of value a flag takes: none (`flag`), free text, a number of seconds above 0,
#: one of `choices`, a directory or a file path (any text: nothing is checked on disk), and
#: a count (a whole number from 0 up).
KINDS = ("flag", "text", "seconds", "choice", "dir", "file", "count")


class Flag:
    """One flag: `names` as typed (long first), the `kind` of its value, whether it may be
    `repeated` (its values collected in order), its `default` and the `envvar` read when it
    is not given, the `metavar` and `help` that `--help` shows (with the default when
    `show_default`), and `dest`: the field it fills (the click parameter's name)."""

    __slots__ = ("choices", "default", "dest", "envvar", "help", "kind", "metavar", "names", "repeated",
                 "show_default")

    def __init__(self, *names: str, dest: str, help: str, kind: str = "text", repeated: bool = False,
                 default: Any = None, envvar: str | None = None, metavar: str | None = None,
                 choices: tuple[str, ...] = (), show_default: bool = False) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}")
        self.names = names
        self.dest = dest
        self.help = help
        self.kind = kind
        self.repeated = repeated
        self.default = default
        self.envvar = envvar
        self.metavar = metavar
        self.choices = choices
        self.show_default = show_default

    def __repr__(self) -> str:
        return f"Flag({self.names[0]!r})"

    def value(self, text: str) -> Any:
        """TEXT as this flag's value, or None when click would refuse it."""
        if self.kind == "seconds":
            return seconds(text)
        if self.kind == "count":
            return count(text)
        if self.kind == "choice":
            return text if text in self.choices else None
        return text


#: The connection flags of every command that talks to a server (`Connection`'s fields), in
#: the order `--help` lists them.
CONNECTION: tuple[Flag, ...] = (
    Flag("--timeout", dest="timeout", kind="seconds", default=TIMEOUT, show_default=True, envvar="MCP_TIMEOUT",
         metavar="SECONDS", help="Wait this long for each response; progress notifications restart the clock."),
    Flag("--max-timeout", dest="max_timeout", kind="seconds", default=MAX_TIMEOUT, show_default=True,
         metavar="SECONDS", help="Hard limit per request, however much progress is reported."),
    Flag("--env", "-e", dest="env", repeated=True, metavar="KEY[=VALUE]",
         help="Set a variable for a stdio server (KEY alone passes ours through)."),
    Flag("--cwd", dest="cwd", kind="dir", help="Working directory of a stdio server."),
    Flag("--quiet", "-q", dest="quiet", kind="flag",
         help="Drop what the server says unasked: its stderr and log messages (--log-level ones still show)."),
    Flag("--server-log", dest="server_log", kind="file", metavar="FILE",
         help="Move the server's stderr and log messages to FILE (appended), off the terminal."),
    Flag("--header", "-H", dest="header", repeated=True, metavar="'NAME: VALUE'",
         help="Extra HTTP header (repeatable)."),
    Flag("--bearer-token", dest="bearer_token", envvar="MCP_BEARER_TOKEN", metavar="TOKEN",
         help="Static bearer token for HTTP servers (prefer the MCP_BEARER_TOKEN variable)."),
    Flag("--transport", dest="transport", kind="choice", choices=("auto", "http", "sse"), default="auto",
         show_default=True, help="HTTP transport: Streamable HTTP, legacy SSE, or detect."),
    Flag("--protocol", dest="protocol", metavar="VERSION",
         help="Force a protocol version instead of negotiating (e.g. 2025-06-18)."),
    Flag("--insecure", dest="insecure", kind="flag", help="Do not verify TLS certificates."),
    Flag("--log-level", dest="log_level", kind="choice", choices=LOG_LEVELS, metavar="LEVEL",
         help="Ask the server for log messages at LEVEL and above (default: only warnings and worse it "
              "sends unasked are shown)."),
    Flag("--trace", dest="trace", kind="flag", help="Print the JSON-RPC traffic on stderr (secrets redacted)."),
    Flag("--record", dest="record", kind="file", metavar="FILE",
         help="Append the JSON-RPC exchange to FILE (0600) as NDJSON, with secret-looking keys and the "
              "connection's secret values redacted (a tool result may hold others: check before sharing); "
              "replay it with `mcp serve --replay FILE`."),
    Flag("--root", dest="root", kind="dir", repeated=True, metavar="DIR",
         help="Offer DIR as a root to the server (repeatable)."),
    Flag("--sampling-command", dest="sampling_command", metavar="CMD",
         help="Answer sampling requests with CMD (request JSON on stdin, reply on stdout)."),
    Flag("--elicit-json", dest="elicit_json", metavar="JSON", help="Answer elicitation requests with this JSON object."),
    Flag("--elicit-defaults", dest="elicit_defaults", kind="flag",
         help="Answer elicitation requests with the schema's defaults."),
    Flag("--no-auth", dest="no_auth", kind="flag", help="Never sign in; fail on 401."),
    Flag("--stored-auth-only", dest="stored_auth_only", kind="flag",
         help="Use stored tokens (refreshing them) but never open a sign-in."),
    Flag("--token-store", dest="token_store", kind="choice", choices=("keyring", "file"), envvar="MCP_TOKEN_STORE",
         help="Where OAuth sign-ins are kept: the OS keyring (default) or a 0600 file."),
    Flag("--profile", dest="profile", envvar="MCP_PROFILE", metavar="NAME",
         help="Use the sign-in of this account (one of several on a server; see `mcp auth login --profile`)."),
    Flag("--meta", dest="meta", repeated=True, metavar="KEY=VALUE",
         help="Add KEY to every request's _meta (repeatable); VALUE is JSON if it parses, else a string."),
    Flag("--traceparent", dest="traceparent", metavar="VALUE",
         help="Continue this W3C trace: its traceparent goes into every request's _meta (default: the "
              "TRACEPARENT variable, with TRACESTATE)."),
)

#: The output flags (`Output`), in the order `--help` lists them.
OUTPUT: tuple[Flag, ...] = (
    Flag("--json", dest="as_json", kind="flag", help="Print the result as JSON (the default when stdout is not a TTY)."),
    Flag("--jsonl", dest="jsonl", kind="flag", help="One JSON value per line (list items, stream events)."),
    Flag("--jq", dest="jq_filter", metavar="FILTER", help="Filter the JSON result with a jq expression."),
    Flag("--raw", "-r", dest="raw", kind="flag", help="With --jq, print strings without JSON quotes."),
    Flag("--compact", "-c", dest="compact", kind="flag",
         help="JSON on one line per value, even on a terminal (jq's -c); implies JSON output."),
)

#: The flags of a command that prints a result (call, read, get).
LARGE_RESULT: tuple[Flag, ...] = (
    Flag("--max-chars", dest="max_chars", kind="count", metavar="N",
         help="Cut human output after N characters, with a marker saying how much was cut (0: no limit; JSON "
              "output is never cut)."),
    Flag("--spill", dest="spill", kind="dir", metavar="DIR", envvar="MCP_SPILL_DIR",
         help="Write a result longer than --max-chars (default 20000) to a file in DIR and print a one-line "
              "pointer (size, type, path) instead [env: MCP_SPILL_DIR]."),
)

#: `mcp tools call`'s arguments.
TOOL_CALL: tuple[Flag, ...] = (
    Flag("--arg", "-a", dest="items", repeated=True, metavar="KEY=VALUE",
         help="An argument: key=value (typed by the schema), key:=json, key=@file, key=@- (stdin)."),
    Flag("--args", dest="args_json", metavar="JSON|@FILE|-",
         help="The whole arguments object: JSON text, @file.json, or - for stdin."),
    Flag("--no-validate", dest="no_validate", kind="flag",
         help="Send the arguments without checking them against the tool's schema (--arg values are still "
              "typed by it)."),
)

#: Every flag above by its field.
FLAGS: dict[str, Flag] = {flag.dest: flag for group in (CONNECTION, OUTPUT, LARGE_RESULT, TOOL_CALL) for flag in group}


def seconds(text: str) -> float | None:
    """TEXT as a number of seconds the click type `seconds()` takes (finite, above 0), or None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 < value < float("inf") else None


def count(text: str) -> int | None:
    """TEXT as a whole number from 0 up, as `click.IntRange(min=0)` takes it from a command line,
    or None (anything unusual: a sign, spaces, other digits than ASCII)."""
    return int(text) if text.isascii() and text.isdigit() else None


def probe_timeout(text: str | None) -> float | None:
    """`MCP_PROBE_TIMEOUT`'s value: unset or empty is PROBE_TIMEOUT; a finite number from 0 up,
    else None (the full path reports it: `mcpcli.cli._connection`)."""
    if not text:
        return PROBE_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 <= value < float("inf") else None


def by_name(dests: Iterable[str]) -> dict[str, Flag]:
    """The flags with these fields, by each of their names (what `parse` is handed)."""
    return {name: FLAGS[dest] for dest in dests for name in FLAGS[dest].names}


def parse(tokens: list[str], taken: Mapping[str, Flag]) -> tuple[dict[str, Any], list[str]] | None:
    """The values of the flags in `taken` (by field: a list for a repeated flag; else the value
    given, its variable's, or its default) and the positionals, in order; None when anything is
    left for click to read or word.

    It reads what click reads for the flags it is handed (`--name VALUE`, `--name=VALUE`, `-n
    VALUE`) and leaves to click everything else: any other flag, `-`, `--`, a short flag
    with its value attached (`-nVALUE`), a value for a flag that takes none, a missing
    value, one the flag's kind refuses (its variable's too), and a flag that takes one value
    given twice (click keeps the last; a reader of the line may not)."""
    values: dict[str, Any] = {flag.dest: [] for flag in taken.values() if flag.repeated}
    positionals: list[str] = []
    i = 0
    while i < len(tokens):
        word = tokens[i]
        i += 1
        if word == "-":
            return None  # click's, whatever it means here
        if not word.startswith("-"):
            positionals.append(word)
            continue
        name, eq, text = word.partition("=") if word.startswith("--") else (word, "", "")
        flag = taken.get(name)
        if flag is None:
            return None
        if flag.kind == "flag":
            if eq:
                return None
            values[flag.dest] = True
            continue
        if not eq:
            if i >= len(tokens):
                return None
            text = tokens[i]
            i += 1
        value = flag.value(text)
        if value is None:
            return None
        if flag.repeated:
            values[flag.dest].append(value)
        elif flag.dest in values:
            return None
        else:
            values[flag.dest] = value
    for flag in taken.values():
        if flag.dest in values:
            continue
        if flag.kind == "flag":
            values[flag.dest] = False
            continue
        env = os.environ.get(flag.envvar) if flag.envvar else None
        if env:  # click reads an empty variable as unset
            values[flag.dest] = flag.value(env)
            if values[flag.dest] is None:
                return None
        else:
            values[flag.dest] = flag.default
    return values, positionals
