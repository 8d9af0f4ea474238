"""One place decides how results reach stdout: JSON, JSON lines, jq, or human.

stdout carries data only. `--json` (or any non-TTY stdout) prints the MCP result
object as the server sent it, so jq recipes written against the spec work;
`--jsonl` prints one value per line; `--jq` filters in-process. On a TTY, results
are rendered for people with rich (imported only then). Server-controlled text is
sanitised before it reaches a terminal: no escape sequences get through.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from mcpcli.errors import UsageError

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["SPILL_THRESHOLD", "Output", "jq_message", "print_json"]

JSON = dict[str, Any]
HumanRenderer = Callable[["Console", Any], None]

#: What `--spill DIR` calls large when `--max-chars` does not say (characters of output).
SPILL_THRESHOLD = 20000


def print_json(console: Console, data: Any) -> None:
    """JSON for a person (rich highlighting), with unsafe characters as `\\uXXXX` escapes.

    rich's own `print_json` writes bidi overrides and other format characters
    raw; escaping them in the JSON text keeps the value the same.
    """
    from rich.highlighter import JSONHighlighter

    from mcpcli.text import json_safe

    text = json_safe(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    console.print(JSONHighlighter()(text), soft_wrap=True)


@dataclass
class Output:
    mode: str  # "human" | "json" | "jsonl"
    stdout: IO[str]
    jq_filter: str | None = None
    raw: bool = False
    pretty: bool = False
    #: `--max-chars N`: human output longer than N characters is cut, with a marker.
    max_chars: int | None = None
    #: `--spill DIR`: output longer than the threshold goes to a file in DIR; stdout gets a pointer.
    spill_dir: str | None = None
    #: Where a note goes when spilling fails and the output is printed after all (stderr).
    warn: Callable[[str], None] | None = None
    _console: Console | None = None
    _jq_program: Any = None

    @classmethod
    def for_stream(
        cls,
        stdout: IO[str],
        *,
        tty: bool,
        as_json: bool = False,
        jsonl: bool = False,
        jq_filter: str | None = None,
        raw: bool = False,
        compact: bool = False,
    ) -> Output:
        """The output for the --json/--jsonl/--jq/--raw/--compact flags on `stdout` (`tty`: a
        terminal). JSON is indented on a terminal only, and never with --compact."""
        if as_json and jsonl:
            raise UsageError("--json and --jsonl cannot be used together")
        if raw and not jq_filter:
            raise UsageError("--raw only applies with --jq")
        if jsonl:
            mode = "jsonl"
        elif as_json or jq_filter or compact or not tty:
            mode = "json"
        else:
            mode = "human"
        out = cls(mode=mode, stdout=stdout, jq_filter=jq_filter, raw=raw, pretty=tty and not compact)
        if jq_filter:
            out._compile_jq()
        return out

    @property
    def human(self) -> bool:
        return self.mode == "human"

    # -- JSON ------------------------------------------------------------------------

    def _compile_jq(self) -> None:
        import jq

        assert self.jq_filter is not None
        try:
            self._jq_program = jq.compile(self.jq_filter)
        except ValueError as exc:
            raise UsageError(f"--jq: {jq_message(exc)}", hint=f"the filter was: {self.jq_filter}") from None

    def _write_json(self, value: Any, *, compact: bool) -> None:
        if compact or not self.pretty:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        else:
            text = json.dumps(value, ensure_ascii=False, indent=2)
        self.stdout.write(text + "\n")

    def _filtered(self, value: Any) -> Iterable[Any]:
        if self._jq_program is None:
            return [value]
        try:
            return list(self._jq_program.input_value(value).all())
        except ValueError as exc:
            raise UsageError(f"--jq: {jq_message(exc)}") from None

    def _emit_value(self, value: Any, *, compact: bool = False) -> None:
        for item in self._filtered(value):
            if self.raw and isinstance(item, str):
                self.stdout.write(item + "\n")
            else:
                self._write_json(item, compact=compact or self.mode == "jsonl")

    # -- public ----------------------------------------------------------------------

    def emit(self, result: Any, *, items: str | None = None, human: HumanRenderer | None = None) -> None:
        """Print one result. `items` names the list that --jsonl spreads one per line.

        With --max-chars or --spill the output is made in memory first, then cut
        (human output only: cut JSON would not parse) or written to a file.
        """
        if (self.max_chars or self.spill_dir) and (self.spill_dir or self.mode == "human"):
            self._emit_limited(result, items=items, human=human)
            return
        self._emit(result, items=items, human=human)

    def _emit(self, result: Any, *, items: str | None, human: HumanRenderer | None) -> None:
        if self.mode == "human":
            if human is not None:
                human(self.console(), result)
            else:
                print_json(self.console(), result)
        elif self.mode == "jsonl" and items is not None and isinstance(result, dict):
            for item in result.get(items) or []:
                self._emit_value(item, compact=True)
        else:
            self._emit_value(result)
        self.stdout.flush()

    def _emit_limited(self, result: Any, *, items: str | None, human: HumanRenderer | None) -> None:
        """Render into a buffer (human output without colour, at the terminal's width), then
        print it whole, cut at --max-chars, or spill it to a file and print a pointer."""
        import io

        real_stdout, real_console = self.stdout, self._console
        buffer = io.StringIO()
        if self.mode == "human":
            from rich.console import Console

            width = self.console().width
            self._console = Console(file=buffer, highlight=False, soft_wrap=False, emoji=False,
                                    markup=False, no_color=True, color_system=None, width=width)
        self.stdout = buffer
        try:
            self._emit(result, items=items, human=human)
        finally:
            self.stdout, self._console = real_stdout, real_console
        text = buffer.getvalue()
        limit = self.max_chars or SPILL_THRESHOLD
        if self.spill_dir and len(text) > limit:
            pointer = self._spill(text)
            if pointer is not None:
                self.stdout.write(pointer + "\n")
                self.stdout.flush()
                return
        elif self.mode == "human" and self.max_chars and len(text) > self.max_chars:
            cut = len(text) - self.max_chars
            text = text[: self.max_chars].rstrip("\n") + (
                f"\n… [cut {cut:,} of {len(text):,} characters (--max-chars {self.max_chars}); "
                "see it all with --max-chars 0, --json, or --spill DIR]\n"
            )
        self.stdout.write(text)
        self.stdout.flush()

    def _kind(self) -> str:
        """What a spilled file holds: `text` (human output, `--raw` strings), `json` or `jsonl`."""
        if self.mode == "human" or self.raw:
            return "text"
        return "jsonl" if self.mode == "jsonl" else "json"

    def _spill(self, text: str) -> str | None:
        """Write `text` to a new 0600 file in the spill directory; the line that points to it
        (a JSON object in machine modes), or None when it could not be written."""
        import tempfile

        assert self.spill_dir is not None
        kind = self._kind()
        data = text.encode("utf-8")
        suffix = {"text": ".txt", "json": ".json", "jsonl": ".jsonl"}[kind]
        try:
            os.makedirs(self.spill_dir, exist_ok=True)
            fd, path = tempfile.mkstemp(prefix="mcp-result-", suffix=suffix, dir=self.spill_dir)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            if self.warn is not None:
                self.warn(f"--spill {self.spill_dir}: {exc.strerror or exc}; printing the result instead")
            return None
        path = os.path.abspath(path)
        if self.mode == "human":
            return f"[{len(data):,} bytes of {kind} spilled to {path}]"
        return json.dumps({"spilled": path, "bytes": len(data), "type": kind}, ensure_ascii=False)

    def event(self, event: Any, *, human: HumanRenderer | None = None) -> None:
        """Print one event of a stream (subscribe): one compact line in machine modes."""
        if self.mode == "human" and human is not None:
            human(self.console(), event)
        elif self.mode == "human":
            print_json(self.console(), event)
        else:
            self._emit_value(event, compact=True)
        self.stdout.flush()

    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            # NO_COLOR (non-empty) means plain text: no colours, and no bold/dim either.
            plain = bool(os.environ.get("NO_COLOR"))
            self._console = Console(
                file=self.stdout, highlight=False, soft_wrap=False, emoji=False,
                markup=False, no_color=plain, color_system=None if plain else "auto",
            )
        return self._console


def jq_message(exc: Exception) -> str:
    """jq's first line without its `jq: error:` prefix or the colon that introduced the
    source excerpt on the next lines (`... line 1, column 9:`)."""
    lines = str(exc).strip().splitlines()
    first = lines[0].strip() if lines else "invalid filter"
    first = first.removeprefix("jq: error:").strip()
    return first.removesuffix(":").strip() or "invalid filter"
