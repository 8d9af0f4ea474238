"""Terminal safety: the one escaper for text a server (or anyone remote) controls.

A server's error message, tool description or log line must not rewrite the
screen (ANSI/OSC sequences, carriage returns), hide or reorder what is shown
(bidi overrides and isolates, "Trojan Source"), smuggle invisible characters
(zero-width spaces, the BOM, tag characters) or break lines where we do not
expect it (U+2028/U+2029). Everything shown to a person goes through
`printable`, and JSON shown to one through `json_safe`; data on stdout that is
not a terminal stays exact. Only `re` is imported, so any
module may use this at start-up.
"""

from __future__ import annotations

import re

# `typing` is milliseconds of start-up the fast paths (which print through this) do not spend.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence
    from typing import Any

__all__ = [
    "LOG_LEVELS", "REDACTED", "UNASKED_LOG_FLOOR", "SecretValues", "entry_secrets", "json_safe", "log_line",
    "log_rank", "one_line", "printable", "redact", "redact_argv", "redact_entry", "secret_name", "verbatim",
]

#: C0 controls but tab and newline, DEL and C1, then Unicode format characters
#: (category Cf, bidi overrides U+202A-E and isolates U+2066-9 among them) and
#: the line and paragraph separators (Zl, Zp).
_UNSAFE = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f"
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
_ESCAPE = re.compile(f"[{_UNSAFE}]")
#: The same, with tab and newline too (text that must stay on one line).
_ESCAPE_ONE_LINE = re.compile(f"[\t\n{_UNSAFE}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _escape_or_space(match: re.Match[str]) -> str:
    return " " if match.group(0) in "\t\n" else _escape(match)


def printable(text: str, *, keep_newlines: bool = True) -> str:
    """`text` with every unsafe character shown as a visible escape (`\\x1b`, `\\u202e`).

    With `keep_newlines=False`, tabs and newlines become spaces, for text that
    must stay on one line (an error message, a table cell).
    """
    if keep_newlines:
        return _ESCAPE.sub(_escape, text)
    return _ESCAPE_ONE_LINE.sub(_escape_or_space, text)


_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_WHITESPACE_RUN = re.compile(r"\s{2,}")


def one_line(text: str, *, newline: str = " ", limit: int | None = None, squeeze: bool = False) -> str:
    """`text` for one line of a message: the form every error and table cell uses.

    Line breaks become `newline` (a space, or " | " where the breaks carry
    meaning, as in a server's multi-line error), tabs a space, unsafe characters
    (U+2028 among them) visible escapes; `squeeze` folds every run of
    whitespace into one space first (an HTML error page). With `limit`, the
    text is cut after that many characters and ends in "...".
    """
    cut = limit is not None and len(text) > limit
    if cut:
        text = text[:limit]
    text = text.strip()
    if squeeze:
        text = _WHITESPACE_RUN.sub(" ", text)
    shown = printable(_LINE_BREAK.sub(newline, text), keep_newlines=False)
    return shown + "..." if cut else shown


def verbatim(text: str, *, limit: int | None = None) -> str:
    """`text` exactly, with every control character escaped, tab and newline too.

    For a URL or value quoted in an error, where a hidden line break or tab is
    itself the thing to see; cut after `limit` characters with "...".
    """
    cut = limit is not None and len(text) > limit
    if cut:
        text = text[:limit]
    shown = printable(text).replace("\t", "\\x09").replace("\n", "\\x0a")
    return shown + "..." if cut else shown


def _json_escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_safe(encoded: str) -> str:
    """JSON text with the unsafe characters written as `\\uXXXX` escapes.

    The value is unchanged (a JSON reader sees the same strings); only the
    characters a terminal would act on are spelled out. For JSON meant for a
    person's terminal (errors on stderr, output on a terminal), never for data piped.
    """
    return _ESCAPE.sub(_json_escape, encoded)


#: The MCP log levels, least severe first (`mcpcli.core.protocol` re-exports them).
LOG_LEVELS: tuple[str, ...] = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
#: Log messages a server sends without being asked (no --log-level) are shown from here up.
UNASKED_LOG_FLOOR = "warning"


def log_rank(level: object) -> int:
    """A level's severity; an unknown level counts as the worst (never hidden)."""
    return LOG_LEVELS.index(level) if isinstance(level, str) and level in LOG_LEVELS else len(LOG_LEVELS) - 1


def log_line(params: dict[str, object]) -> str:
    """A `notifications/message` as one stderr line: `[level] logger: text`.

    Here rather than in the CLI so the `@NAME` fast path prints the very line the
    normal path prints without importing the CLI.
    """
    import json

    level = str(params.get("level", "info"))
    logger = params.get("logger")
    data = params.get("data")
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    prefix = f"[{level}]" + (f" {logger}:" if isinstance(logger, str) and logger else "")
    return printable(f"{prefix} {text}", keep_newlines=False)


# -- secrets in traces and recordings ---------------------------------------------

#: Keys whose string values `--trace` and `--record` never show.
_SECRET_KEY = re.compile(
    r"(pass(word|wd)?|secret|token|api[_-]?key|authorization|cookie|credential|private[_-]?key)",
    re.IGNORECASE,
)
#: What `--trace` prints and `--record` writes in place of such a value (and what
#: `mcp serve --replay` takes as matching any string).
REDACTED = "\u00abredacted\u00bb"


#: Keys that match the pattern but never hold secrets (protocol fields).
_NOT_SECRET = frozenset({"progressToken", "maxTokens", "token_type", "tokenType"})


def _secret(key: Any, value: Any) -> bool:
    return (
        isinstance(key, str)
        and key not in _NOT_SECRET
        and _SECRET_KEY.search(key) is not None
        and isinstance(value, str)
        and value != ""
    )


#: A bearer credential quoted in text (`Authorization: Bearer sk-...`), even one the
#: connection never knew: 6+ token characters, one at least not a letter (prose is left).
_BEARER = re.compile(r"(?i)\b(bearer\s+)(?=[A-Za-z]*[0-9\-._~+/])[A-Za-z0-9\-._~+/]{6,}=*")

_BEARER_HINT = re.compile(r"(?i)bearer")

#: Known secret values shorter than this are left alone (they would mangle ordinary text).
MIN_SECRET = 6


class SecretValues:
    """The secret values one connection knows (its --env values, header values, bearer
    token, headersHelper output...), so `redact` can replace them wherever they appear:
    a server may echo a token back inside a tool result, under a key no name rule catches.
    Mutable because some are learnt while connecting (a headersHelper's output)."""

    def __init__(self, values: Iterable[str | None] = ()) -> None:
        self._values: list[str] = []
        self.add(*values)

    def add(self, *values: str | None) -> None:
        """Remember these values (and the credential after an auth scheme such as `Bearer`)."""
        for value in values:
            if not value:
                continue
            for candidate in (value, value.split(None, 1)[-1]):
                candidate = candidate.strip()
                if len(candidate) >= MIN_SECRET and candidate not in self._values:
                    self._values.append(candidate)
        # Longest first: a value containing another is replaced whole.
        self._values.sort(key=len, reverse=True)

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __bool__(self) -> bool:
        return bool(self._values)

    def scrub(self, text: str) -> str:
        for secret in self._values:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return _BEARER.sub(lambda m: m.group(1) + REDACTED, text) if _BEARER_HINT.search(text) else text


def redact(value: Any, secrets: SecretValues | None = None) -> Any:
    """A copy with the string values of secret-looking keys replaced, and inside any
    string (keys included) each of the known `secrets` and any quoted bearer credential.
    `--trace` and `--record` both write through this."""
    scrub = (secrets or _NO_SECRETS).scrub
    if isinstance(value, dict):
        return {
            scrub(k) if isinstance(k, str) else k: REDACTED if _secret(k, v) else redact(v, secrets)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v, secrets) for v in value]
    if isinstance(value, str):
        return scrub(value)
    return value


_NO_SECRETS = SecretValues()


# -- secrets in server entries (servers show/list/add/install, session targets) ----------

#: Names of environment variables and headers that hold secrets by convention: the keys
#: `redact` hides, and KEY or AUTH anywhere in the name (OPENAI_KEY, DEEPL_AUTH_KEY, X-Auth).
_SECRET_NAME = re.compile(r"key|auth", re.IGNORECASE)
#: The fields of a server entry, in any client's dialect, that map names to values.
_NAMED_VALUES = frozenset({"env", "environment", "envs", "headers", "http_headers"})
#: Fields that hold a URL, and those that hold an argv (opencode's `command` is a list).
_URL_FIELDS = frozenset({"url", "httpUrl", "serverUrl", "uri"})
_ARGV_FIELDS = frozenset({"args", "command", "headersHelper"})


def secret_name(name: str) -> bool:
    """Whether an environment variable or header of this name holds a secret (TOKEN, KEY,
    SECRET, PASSWORD, AUTH, CREDENTIAL, COOKIE... anywhere in it)."""
    return _SECRET_KEY.search(name) is not None or _SECRET_NAME.search(name) is not None


def _argv_secrets(argv: Sequence[Any]) -> Iterator[tuple[str, str]]:
    """(where, value) for each secret in a command line: the value of `--token=V`, `API_KEY=V`
    and `X-Api-Key: V` forms with a secret-looking name, and the argument after a flag that
    names one outright (`--api-key V`, `--password V`; not a bare `--auth`, which may be a
    switch)."""
    for i, arg in enumerate(argv):
        if not isinstance(arg, str):
            continue
        for sep in ("=", ":"):
            name, found, value = arg.partition(sep)
            name, value = name.strip(), value.strip()
            if found and value and name and " " not in name and secret_name(name.lstrip("-")):
                if sep == ":" and "//" in value:  # a URL's scheme, not a header
                    continue
                yield f"argument {name}", value
                break
        else:
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            if (arg.startswith("-") and _SECRET_KEY.search(arg) and isinstance(nxt, str) and nxt
                    and not nxt.startswith("-")):
                yield f"argument {arg}", nxt


def _url_secrets(url: str) -> Iterator[tuple[str, str]]:
    """A URL's password, and the values of its secret-looking query parameters (?api_key=)."""
    from urllib.parse import parse_qsl, urlsplit

    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return
    if password:
        yield "the URL's password", password
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if secret_name(name):
            yield f"the URL's {name}", value


def _walk_entry(value: Any, found: list[tuple[str, str]], field: str | None = None) -> Any:
    """`value` with the values of secret-looking names replaced (each noted in `found`);
    an argv's and a URL's secrets are only noted (they are replaced inside strings)."""
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            named = field in _NAMED_VALUES and isinstance(key, str) and secret_name(key)
            if isinstance(item, str) and item and (named or _secret(key, item)):
                where = f"{'header' if field and 'header' in field else 'env'} {key}" if named else str(key)
                found.append((where, item))
                out[key] = REDACTED
            else:
                out[key] = _walk_entry(item, found, key if isinstance(key, str) else None)
        return out
    if isinstance(value, list):
        if field in _ARGV_FIELDS:
            found.extend(_argv_secrets(value))
        return [_walk_entry(item, found, None) for item in value]
    if isinstance(value, str) and field in _URL_FIELDS:
        found.extend(_url_secrets(value))
    return value


def entry_secrets(entry: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The secrets written in a server entry (ours, or any client's dialect), as (where,
    value): the values of secret-looking env and header names and of secret-looking keys
    (`clientSecret`), those in its command line (`--api-key V`, `TOKEN=V`) and in its URL
    (a password, `?api_key=V`). `${VAR}` references are among them: the caller tells a
    literal value (`"${" not in value`) from one read from the environment."""
    found: list[tuple[str, str]] = []
    _walk_entry(dict(entry), found)
    return found


def redact_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A server entry as shown to a person: every value `entry_secrets` finds replaced
    (whole values, or inside a command line or URL), and any other quoted bearer credential."""
    found: list[tuple[str, str]] = []
    shown = _walk_entry(dict(entry), found)
    return redact(shown, SecretValues(value for _, value in found))  # type: ignore[no-any-return]


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line as shown to a person (a session's target, `mcp info`'s endpoint):
    the secrets `entry_secrets` finds in one replaced, and any quoted bearer credential."""
    secrets = SecretValues(value for _, value in _argv_secrets(argv))
    return [secrets.scrub(arg) for arg in argv]
