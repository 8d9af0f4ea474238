"""The `mcp` command's entry point, kept free of imports on purpose.

A one-shot call to a stdio server spends most of its time waiting for the
server to boot. So when the server command is right there on the command line
(after `--`), `main()` starts it before importing click, anyio or anything
else, and the rest of mcpcli loads while the server boots; the stdio transport
adopts the process later (`mcpcli.transports.spawn`). For `tools call` that comes
before the fast paths load too: the one-shot path adopts it the same way. Everything
else lives in `mcpcli.cli._root`.

The package owns the command line: parsing (click), the injected `App`, option
groups, prompts on the terminal, and mapping errors to exit codes. Commands only
parse, call the library and render; they may import any of mcpcli, and nothing
in mcpcli imports them. This module itself imports only the standard library and,
lazily, `mcpcli.transports.spawn`, `mcpcli.cli.fast` (`tools call @NAME` through
the session daemon without loading the CLI; start-up time is measured) and
`mcpcli.cli.oneshot` (`tools call TOOL -- CMD`, synchronously, without click or anyio).
"""

from __future__ import annotations

import sys

# `typing` is milliseconds of start-up the `@NAME` fast path does not spend.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["COMMANDS", "cli", "main"]

#: Commands that connect to the target server (and nothing else).
_CONNECTING = frozenset({"tools", "resources", "prompts", "tasks", "complete", "ping", "info", "inspect"})
#: Options that change how a server is spawned; with any of them, wait for click.
_SPAWN_OPTIONS = ("-e", "--env", "--cwd", "-h", "--help")


def _early_spawn(args: list[str]) -> None:
    """Spawn the `--` server now if this is plainly a connecting command."""
    if "--" not in args:
        return
    at = args.index("--")
    before, command = args[:at], args[at + 1 :]
    if not command or not before or before[0] not in _CONNECTING:
        return
    if any(token.startswith(_SPAWN_OPTIONS) for token in before):
        return
    if any("${" in token for token in command):
        return  # interpolated from the environment first (`targets.stdio_launch`): leave it to click
    from mcpcli.transports.spawn import launch, prespawn

    prespawn(launch(command[0], command[1:]))


#: `tools call` flags that take no value: before `--`, one of them leaves it the separator.
CALL_SWITCHES = frozenset({"-q", "--quiet", "--json", "--jsonl", "--no-validate", "-r", "--raw"})


def _separates(args: list[str]) -> bool:
    """Whether the first `--` is the separator (click's and the fast paths'), not the value of
    the flag before it (`--args --`): only then is no `@NAME` session call to be made of it."""
    before = args[args.index("--") - 1]
    return not before.startswith("-") or before in CALL_SWITCHES or (before.startswith("--") and "=" in before)


def main(argv: Sequence[str] | None = None) -> int:
    """Run `mcp`; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    status = _fast_paths(args)
    if status is None:
        _early_spawn(args)
        from mcpcli.cli._root import run

        return run(args)
    if argv is None:
        # A fast path served the `mcp` program's command, and the process ends next with
        # nothing of it left to finalize (its server stopped, its files closed; exit handlers
        # run and stdout and stderr are flushed as ever). The collection pass at exit would
        # only free memory the exit frees anyway, ~4 ms of a one-shot call: frozen, its
        # objects are left out of it.
        import gc

        gc.freeze()
    return status


def _fast_paths(args: list[str]) -> int | None:
    """`tools call` through a session (`cli.fast`) or to a stdio server (`cli.oneshot`);
    None: the full path runs the command."""
    if args[:2] != ["tools", "call"]:
        return None
    if "--" in args and _separates(args):
        # The server boots while the fast paths load: the one-shot path adopts it, and so
        # does the full path when neither takes the command (it would spawn it here anyway).
        _early_spawn(args)
    from mcpcli.cli.fast import try_call

    name = sys.argv[0].rsplit("/", 1)[-1] if sys.argv and sys.argv[0] else "mcp"
    prog = name if name in ("mcp", "mcpcli") else "mcp"
    status = try_call(args, prog)
    if status is None:
        from mcpcli.cli.oneshot import try_call as try_oneshot

        status = try_oneshot(args, prog)
    return status


def __getattr__(name: str) -> Any:
    # `from mcpcli.cli import cli` (scripts, tests) loads the click tree on demand.
    if name in ("cli", "COMMANDS", "HIDDEN", "split_server_command"):
        from mcpcli.cli import _root

        return getattr(_root, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
