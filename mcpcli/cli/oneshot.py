"""The one-shot stdio fast path: `mcp tools call [SERVER] TOOL ... [-- CMD ARGS]` without click
or anyio, for a server command after `--` or a stdio server configured in our config.

A one-shot call to a stdio server spent most of its own CPU importing click,
asyncio, anyio and the client, for four round trips. `main()` tries this first:
a synchronous client (one process, its pipes, `selectors`) that does what the
full path does for the common case, and returns None, before it starts anything
(a `--` server `main()` spawned first is left for the full path to adopt), for
anything else: a terminal on stdout or stderr (human output, a
progress bar, prompts), any flag `fast.parse_flags` does not take (the @NAME
fast path's flags but `--meta`: `--arg`/`-a`, `--args JSON`, `--timeout`, `--max-timeout`,
`--no-validate`, `--json`, `--jsonl`, `-q`, `--jq` with `-r`, `--max-chars`), an invalid
`--jq` filter, a `${VAR}` in the command, a
TARGET that is not a plain stdio server of our config (a URL, a file, a session,
a `keepAlive` server, another client's server), a bad `MCP_PROBE_TIMEOUT`, or
`MCPCLI_NO_FAST_PATH=1`.

The server is the one `main()` spawned before this module loaded, when its command
is on the line (`transports.spawn.adopt`), else one this path spawns. Once it runs, it
speaks as `mcpcli.client.Client` does: the era from the probe memory of
`mcpcli.cache` (a command line remembered as legacy skips
the `server/discover` probe; a silent probe means legacy; a server that ends on
the probe is started again, unheard, and asked `initialize`), the same requests,
ids, `_meta` and timeouts (the handshake bounded by --timeout as a whole;
progress restarts a request's clock up to --max-timeout; a timeout sends
`notifications/cancelled`), arguments typed by `mcpcli.args` against the
listed schema and checked by `mcpcli.validation` (jsonschema only when
needed), server requests answered as the full path answers them without a
terminal (ping; elicitation declined with the same warning; sampling and
roots "Method not found"), log messages and server stderr shown as it shows
them, the same errors and exit codes (`errors.print_error`), and the server stopped
as `StdioTransport` stops it (its group: EOF, TERM, KILL, same graces, and the same memory
of command lines whose servers are slow to exit on EOF, `cache.ExitRecords`).

Until `tools/call` is sent nothing is final: what would go to stderr is held,
and a negotiation off the common road (a server refusing the remembered era,
an unexpected probe answer, a tool that must run as a task, a server
declaring the 2026-07-28 tasks extension) stops the server, drops what was
held and returns None, so the full path runs the command from the start.
What it cannot follow after the call is sent, a task a server did not
announce (a 2026-07-28 `resultType: "task"` without the extension declared),
is a protocol error (exit 4) with the hint to run it on the full path.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from mcpcli.cache import ExitRecords
    from mcpcli.cli._oneshot_client import Stderr, StdioServer
    from mcpcli.transports.spawn import Launch

__all__ = ["try_call"]


def try_call(args: list[str], prog: str = "mcp") -> int | None:
    """Run `tools call [TARGET] TOOL ... [-- CMD ARGS]` synchronously for a stdio server;
    None: take the full path."""
    if os.environ.get("MCPCLI_NO_FAST_PATH") or sys.platform == "win32" or args[:2] != ["tools", "call"]:
        return None
    from mcpcli.cli.fast import _isatty, compile_jq, parse_flags
    from mcpcli.core import flags

    if _isatty(1) or _isatty(2):
        return None  # human output, a progress bar, prompts: the full path's
    at = args.index("--") if "--" in args else len(args)
    call = parse_flags(args[2:at])
    if call is None or not compile_jq(call):
        return None
    spec = _launch(call["positionals"], args[at + 1:] if at < len(args) else None)
    if spec is None:
        return None
    call["tool"] = call["positionals"][-1]
    probe_timeout = flags.probe_timeout(os.environ.get(flags.PROBE_TIMEOUT_ENV))
    if probe_timeout is None:
        return None  # the full path reports it
    if call["json"] is not None:
        from mcpcli.args import read_json_source
        from mcpcli.errors import McpCliError

        try:
            read_json_source(call["json"])
        except McpCliError:
            return None  # the full path words it (before starting anything)
    target = call["positionals"][0] if len(call["positionals"]) == 2 else None
    return _run(call, spec, target, probe_timeout, prog)


def _launch(positionals: list[str], command: list[str] | None) -> Launch | None:
    """What runs: the command after `--` (with TOOL alone before it), or the stdio server
    configured as TARGET in our config (plain: no session, every `${VAR}` set); else None.

    Our config only: it is the user's own and wins over every other file in
    `targets.resolve_target`, so this runs exactly what the full path would. A name
    found only in another client's file, a project file's above all, takes the full
    path, where a project file's server must be trusted (or --project, which this path
    does not take) before anything starts."""
    from mcpcli.transports.spawn import launch

    if command is not None:
        if len(positionals) != 1 or not command or any("${" in token for token in command):
            return None  # `${VAR}` is interpolated by the full path (`targets.stdio_launch`)
        return launch(command[0], command[1:])
    if len(positionals) != 2:
        return None
    target = positionals[0]
    if target.startswith("@") or "://" in target or target.endswith((".yaml", ".yml")):
        return None
    from mcpcli.config import Config
    from mcpcli.errors import McpCliError
    from mcpcli.targets import stdio_launch

    try:
        entry = Config().get(target)
        if entry is None or entry.transport != "stdio" or entry.command is None or entry.keep_alive:
            return None  # other clients' servers, URLs, files, sessions: the full path's
        return stdio_launch(entry, {}, None)
    except McpCliError:
        return None  # a broken config or an unset variable: the full path says which


def _run(call: dict[str, Any], spec: Launch, target: str | None, probe_timeout: float, prog: str) -> int | None:
    import signal

    from mcpcli.cli.fast import print_error
    from mcpcli.transports.spawn import SpawnError, adopt, spawn

    def terminated(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM, as for the full path: "interrupted", 130

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        # Started by `main()` before this path loaded, when the command was on the line.
        process = adopt(spec) or spawn(spec.command, spec.args, spec.env, spec.cwd)
    except SpawnError:
        signal.signal(signal.SIGTERM, previous)
        return None  # the full path says why, in its words
    except KeyboardInterrupt:
        signal.signal(signal.SIGTERM, previous)
        from mcpcli.errors import Interrupted

        return print_error(Interrupted("interrupted"), prog, call)
    try:
        # The rest of the client loads while the server boots.
        from mcpcli.cli._oneshot_client import (
            GONE,
            Fallback,
            Stderr,
            StdioServer,
            SyncClient,
            call_tool,
        )
        from mcpcli.errors import Interrupted, McpCliError, ToolError

        if call["validate"]:
            # The arguments are checked once the tools are listed, when the call waits on
            # it: its module loads now, while the server boots (jsonschema stays lazy).
            import mcpcli.validation  # noqa: F401
        from mcpcli.cache import ExitRecords

        err = Stderr()
        command_line = [spec.command, *spec.args]
        exits = ExitRecords(command_line)  # the server started again (era probe) shares it
        server = StdioServer(process, err, call["quiet"], exits)
        client = SyncClient(server, prog, call["timeout"], call["max_timeout"], call["quiet"], call["trace"])
        client.respawn = lambda: _respawn(spec, err, call["quiet"], exits)
    except BaseException as exc:
        # Interrupted this early (or a bug): the server must not outlive us.
        signal.signal(signal.SIGTERM, previous)
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        process.wait()
        if isinstance(exc, KeyboardInterrupt):
            from mcpcli.errors import Interrupted

            return print_error(Interrupted("interrupted"), prog, call)
        raise
    error: McpCliError | None = None
    status: int | None = None
    try:
        try:
            status = call_tool(client, call, command_line, target, probe_timeout)
        except Fallback:
            err.dropped = True  # the full path runs the command from the start
            return None
        except McpCliError as exc:
            error = exc
        except KeyboardInterrupt:
            error = Interrupted("interrupted")
        except Exception as exc:  # a bug: one line, as `_root._main` words it
            error = McpCliError(
                f"internal error: {type(exc).__name__}: {exc}",
                hint="please report this at https://github.com/mcpcli/mcpcli/issues (run with --debug for a traceback)",
            )
        finally:
            server = client.server  # a new one, if the first ended on the era probe
            try:
                server.stop()
            except KeyboardInterrupt:
                server.signal_group(signal.SIGKILL)
                server.process.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
    err.release()
    if error is not None:
        return print_error(error, prog, call)
    if status == GONE:
        from mcpcli.cli.fast import _stdout_gone

        return _stdout_gone()
    if status == 1:
        return print_error(ToolError(f"tool {call['tool']!r} reported an error"), prog, call)
    return status


def _respawn(spec: Launch, err: Stderr, quiet: bool, exits: ExitRecords) -> StdioServer:
    """The server started again (`StdioTransport.connect`'s start, its failure worded alike)."""
    import signal

    from mcpcli.cli._oneshot_client import StdioServer
    from mcpcli.errors import TransportError
    from mcpcli.transports.spawn import SpawnError, spawn

    try:
        process = spawn(spec.command, spec.args, spec.env, spec.cwd)
    except SpawnError as exc:
        raise TransportError(str(exc), hint=exc.hint) from None
    try:
        return StdioServer(process, err, quiet, exits)
    except BaseException:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        process.wait()
        raise
